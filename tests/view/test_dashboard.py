"""Attribution and the live dashboard, fed synthetic Steps over a real prompt and tokenizer.

The steps copy the input's tokens by the characters they cover, so the tests hold for any
byte-level BPE that splits text like Qwen's (words with their leading space, digits apart)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.style import Style

from specedit.drafting.kinds import BRANCH, MAIN
from specedit.editing import prompts
from specedit.engine.events import Stats, Step
from specedit.view.attribution import GENERATED, RELAXED, Attribution
from specedit.view.dashboard import STYLES, Dashboard, dashboard_enabled

TEXT = "alpha = 1\nnaïve → café 🦜 done\nomega = 3\n"
# Character spans of TEXT; word boundaries are token boundaries.
ALPHA = (0, 7)  # "alpha ="
ALPHA_LINE = (0, 10)  # "alpha = 1\n"
UNICODE_LINE = (10, 30)  # "naïve → café 🦜 done\n"
NAIVE = (10, 15)  # "naïve"
ARROW = (15, 17)  # " →"
CAFE = (17, 22)  # " café"
PARROT = (22, 24)  # " 🦜", four bytes after the space: split over tokens
DONE = (24, 30)  # " done\n"


def at(prompt: prompts.EditPrompt, span: tuple[int, int]) -> list[int]:
    """The input's token offsets that cover TEXT[span] exactly."""
    start, end = span
    offsets = prompt.input_offsets
    found = [i for i, (s, e) in enumerate(offsets) if start <= s and e <= end]
    assert found and offsets[found[0]][0] == start and offsets[found[-1]][1] == end, span
    assert found == list(range(found[0], found[-1] + 1))
    return found


@pytest.fixture(scope="module")
def prompt(tokenizer) -> prompts.EditPrompt:
    built = prompts.build(tokenizer, prompts.load_template("edit"), TEXT, "edit it", "")
    tokens = built.ids[built.input_start : built.input_end]
    assert tokenizer.decode(tokens) == TEXT
    pieces = [at(built, span) for span in (NAIVE, ARROW, CAFE, PARROT, DONE)]
    assert at(built, UNICODE_LINE) == [offset for piece in pieces for offset in piece]
    # the tests rely on the parrot's bytes being split over tokens
    parrot = [tokens[i] for i in at(built, PARROT)]
    assert any(tokenizer.decode(parrot[: k + 1]).endswith("\ufffd") for k in range(len(parrot)))
    return built


@pytest.fixture(scope="module")
def decode(tokenizer):
    return lambda ids: tokenizer.decode(ids, skip_special_tokens=True)


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def copy(
    prompt: prompts.EditPrompt,
    offsets: Iterable[int],
    own: Sequence[int] = (),
    kind: str = MAIN,
    drafted: int = 8,
) -> Step:
    """A step that copies input tokens at `offsets` (token offsets into the input), then commits
    the model's own tokens `own`."""
    positions = [prompt.input_start + offset for offset in offsets]
    return Step(
        tokens=[prompt.ids[p] for p in positions] + list(own),
        sources=[*positions] + [None] * len(own),
        kinds=[kind] * len(positions) + [None] * len(own),
        drafted=drafted,
    )


def test_consecutive_copies_merge_into_one_span_of_the_right_input(prompt, decode, tokenizer):
    attribution = Attribution(prompt, decode)
    x = ids(tokenizer, "X")
    attribution.add(copy(prompt, at(prompt, ALPHA_LINE), x))
    attribution.add(copy(prompt, at(prompt, NAIVE), kind=BRANCH))
    attribution.add(copy(prompt, at(prompt, ARROW) + at(prompt, CAFE)))  # a new kind: new span
    attribution.add(copy(prompt, at(prompt, DONE)))  # a jump in the source starts one too

    spans = attribution.spans
    assert [(s.source, s.kind, s.tokens) for s in spans] == [
        ("input", MAIN, len(at(prompt, ALPHA_LINE))),
        (None, None, 1),
        ("input", BRANCH, len(at(prompt, NAIVE))),
        ("input", MAIN, len(at(prompt, ARROW) + at(prompt, CAFE))),
        ("input", MAIN, len(at(prompt, DONE))),
    ]
    assert attribution.text == "alpha = 1\nXnaïve → café done\n"
    assert [TEXT[slice(*s.input)] for s in spans if s.input] == [
        "alpha = 1\n",
        "naïve",
        " → café",
        " done\n",
    ]
    for span in spans:  # each copy reads in the output as it did in the input
        if span.input:
            assert attribution.text[slice(*span.output)] == TEXT[slice(*span.input)]
    assert attribution.text[slice(*spans[1].output)] == "X"
    copied = sum(s.tokens for s in spans if s.source == "input")
    assert attribution.copied_share == pytest.approx(copied / (copied + 1))


def test_output_offsets_count_characters_when_a_character_spans_steps(prompt, decode, tokenizer):
    attribution = Attribution(prompt, decode)
    line, parrot = at(prompt, UNICODE_LINE), at(prompt, PARROT)
    tokens = prompt.ids[prompt.input_start : prompt.input_end]
    inside = next(i for i in parrot if decode(tokens[: i + 1]).endswith("\ufffd"))
    attribution.add(copy(prompt, line[: line.index(inside) + 1]))  # stops inside 🦜
    waiting = TEXT[UNICODE_LINE[0] : prompt.input_offsets[inside][0]]
    assert waiting.startswith("naïve → café") and "🦜" not in waiting
    assert attribution.text == waiting  # the half parrot waits
    attribution.add(copy(prompt, line[line.index(inside) + 1 :]))
    melting = ids(tokenizer, "🫠")
    assert len(melting) > 1  # the model's own character, also split over tokens
    attribution.add(copy(prompt, [], melting[:1]))
    assert attribution.text == "naïve → café 🦜 done\n"
    attribution.add(copy(prompt, [], melting[1:]))

    assert attribution.text == "naïve → café 🦜 done\n🫠" == decode(attribution.tokens)
    copied, generated = attribution.spans
    assert (copied.tokens, generated.tokens) == (len(line), len(melting))
    assert copied.input == (10, 30) and copied.output == (0, 20)
    assert attribution.text[slice(*copied.output)] == TEXT[slice(*copied.input)]
    assert attribution.text[slice(*generated.output)] == "🫠"


def test_decoding_that_depends_on_context_keeps_the_spaces_between_steps(prompt, tokenizer):
    def decode(ids: list[int]) -> str:  # like SentencePiece: a text's leading space is dropped
        return tokenizer.decode(ids).lstrip(" ")

    attribution = Attribution(prompt, decode)
    for span in (NAIVE, ARROW, CAFE):  # each step after the first starts with a space
        attribution.add(copy(prompt, at(prompt, span)))
    attribution.add(copy(prompt, at(prompt, PARROT) + at(prompt, DONE)))
    assert attribution.text == "naïve → café 🦜 done\n"


def test_sources_outside_the_input_and_relaxed_acceptances_are_labelled(prompt, decode):
    attribution = Attribution(prompt, decode)
    alpha, one = at(prompt, ALPHA), at(prompt, (7, 9))  # "alpha =", then " " and "1"
    assert len(one) == 2
    attribution.add(copy(prompt, alpha))
    step = copy(prompt, one)
    step.relaxed = [True, False]  # CASD may add this; the Step need not declare it
    attribution.add(step)
    end = len(prompt.ids)  # positions past the prompt are earlier output: here "alpha"'s first
    attribution.add(Step([prompt.ids[0], attribution.tokens[0]], [0, end], [MAIN, MAIN], 2))

    assert [(s.source, s.kind, s.input) for s in attribution.spans] == [
        ("input", MAIN, (0, 7)),
        ("input", RELAXED, (7, 8)),
        ("input", MAIN, (8, 9)),
        ("prompt", MAIN, None),
        ("output", MAIN, None),
    ]
    assert attribution.kinds == {MAIN: len(alpha) + 3, RELAXED: 1}
    copied = len(alpha) + 2
    assert attribution.copied_share == pytest.approx(copied / (copied + 2))


def test_json_round_trips(prompt, decode, tokenizer):
    attribution = Attribution(prompt, decode)
    line, ok = at(prompt, UNICODE_LINE), ids(tokenizer, "ok")
    attribution.add(copy(prompt, line, ok))
    record = json.loads(attribution.to_json())
    assert record["output"] == "naïve → café 🦜 done\nok"
    n = len(line)
    assert record["spans"] == [
        {"output": [0, 20], "input": [10, 30], "source": "input", "kind": MAIN, "tokens": n},
        {"output": [20, 22], "input": None, "source": None, "kind": None, "tokens": len(ok)},
    ]
    assert record["tokens_by_source"] == {"input": len(line), GENERATED: len(ok)}
    assert record["copied_share"] == round(len(line) / (len(line) + len(ok)), 4)


def console(width: int = 80, height: int = 24) -> Console:
    return Console(record=True, width=width, height=height, file=io.StringIO(), force_terminal=True)


def fed(prompt, decode, tokenizer, screen: Console) -> Dashboard:
    """A dashboard after three passes: "alpha = 1\n" copied then X, Y, "naïve →" copied then Z;
    every drafted token but three accepted."""
    dashboard = Dashboard(prompt, decode, 100, "edit notes.txt", screen)
    alpha, naive = at(prompt, ALPHA_LINE), at(prompt, NAIVE) + at(prompt, ARROW)
    dashboard.on_step(copy(prompt, alpha, ids(tokenizer, "X"), drafted=len(alpha) + 1))
    dashboard.on_step(copy(prompt, [], ids(tokenizer, "Y"), drafted=2))
    dashboard.on_step(copy(prompt, naive, ids(tokenizer, "Z"), drafted=len(naive)))
    return dashboard


def test_fits_an_80_by_24_terminal_and_shows_the_stats(prompt, decode, tokenizer):
    screen = console()
    screen.print(fed(prompt, decode, tokenizer, screen))
    copied = len(at(prompt, ALPHA_LINE) + at(prompt, NAIVE) + at(prompt, ARROW))
    tokens = copied + 3  # and X, Y, Z; as many as were drafted
    lines = screen.export_text().splitlines()
    assert lines and max(cell_len(line) for line in lines) <= 80
    assert len(lines) <= 23
    stats = next(line for line in lines if "passes" in line)
    assert "3 passes" in stats
    assert f"{tokens / 3:.2f} tok/pass" in stats
    assert f"{copied / tokens:.0%} accepted" in stats
    assert f"{copied / tokens:.0%} copied" in stats
    assert any(f"{tokens}/100 tokens" in line for line in lines)
    assert any("generated" in line and "relaxed" in line for line in lines)  # the legend


def styles_of(screen: Console, dashboard: Dashboard, word: str) -> list[list[Style]]:
    """For the screen rows that show `word`, top to bottom, the styles of the segments with it."""
    rows = screen.render_lines(dashboard, screen.options, pad=False)
    styles = [[seg.style for seg in row if word in seg.text] for row in rows]
    return [row for row in styles if row]


def test_copied_input_is_lit_in_the_colour_of_its_kind(prompt, decode, tokenizer):
    screen = console()
    dashboard = fed(prompt, decode, tokenizer, screen)
    main, generated = Style.parse(STYLES[MAIN]), Style.parse(STYLES[GENERATED])
    # Rows top to bottom: the input panel's, then the output panel's.
    assert styles_of(screen, dashboard, "alpha") == [[main], [main]]
    assert styles_of(screen, dashboard, "→") == [[main + Style(underline=True)], [main]]
    assert styles_of(screen, dashboard, "omega") == [[Style(dim=True)]]  # not copied, not output
    assert styles_of(screen, dashboard, "Z") == [[generated]]


def test_a_wide_terminal_shows_input_and_output_side_by_side(prompt, decode, tokenizer):
    screen = console(160, 40)
    screen.print(fed(prompt, decode, tokenizer, screen))
    lines = screen.export_text().splitlines()
    assert max(cell_len(line) for line in lines) <= 160
    assert len(lines) <= 39
    assert "input" in lines[0] and "output" in lines[0]
    assert lines[1].count("alpha = 1") == 2


def test_long_lines_tabs_and_wide_characters_stay_inside_80_columns(tokenizer, decode):
    text = "\tdef f():  # " + "中文" * 40 + "\n" + "x = 1; " * 30 + "\n"
    prompt = prompts.build(tokenizer, prompts.load_template("edit"), text, "edit it", "")
    screen = console()
    dashboard = Dashboard(prompt, decode, 100, "edit a very long file name " * 5, screen)
    dashboard.on_step(copy(prompt, range(prompt.input_end - prompt.input_start)))
    screen.print(dashboard)
    lines = screen.export_text().splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert sum("中文" in line for line in lines) > 2  # the long line wraps, in both panels


def test_live_view_stops_on_interrupt_and_summary_stays(prompt, decode, tokenizer):
    screen = console()
    with pytest.raises(KeyboardInterrupt), Dashboard(prompt, decode, 100, "t", screen) as dash:
        raise KeyboardInterrupt
    assert not dash._live.is_started

    with fed(prompt, decode, tokenizer, screen) as dash:
        stats = Stats(new_tokens=12, forward_passes=3, drafted_tokens=12, accepted_tokens=9)
        stats.total_seconds = 2.0
        dash.finish(stats)
    summary = screen.export_text()
    copied = len(at(prompt, ALPHA_LINE) + at(prompt, NAIVE) + at(prompt, ARROW))
    assert "12 tokens in 2.0s, 6.0 tok/s, 4.00 tok/pass over 3 passes" in summary
    assert f"75% of 12 accepted; {copied / (copied + 3):.0%} of the output copied" in summary


def test_only_a_terminal_gets_the_dashboard():
    assert dashboard_enabled(console())
    assert not dashboard_enabled(console(), quiet=True)
    assert not dashboard_enabled(Console(file=io.StringIO(), width=80, height=24))

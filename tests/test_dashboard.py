"""Attribution and the live dashboard, fed synthetic Steps over a real prompt and tokenizer."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.style import Style

from specedit import prompts
from specedit.drafting.kinds import BRANCH, MAIN
from specedit.engine.session import Stats, Step
from specedit.view.attribution import GENERATED, RELAXED, Attribution
from specedit.view.dashboard import STYLES, Dashboard, dashboard_enabled

TEXT = "alpha = 1\nnaïve → café 🦜 done\nomega = 3\n"
# The input's tokens: alpha| =| |1|\n|na|ï|ve| →| café| 🦜 in three byte pieces| done|\n|omega|...
ALPHA_LINE = range(0, 5)  # "alpha = 1\n"
UNICODE_LINE = range(5, 15)  # "naïve → café 🦜 done\n", the parrot split over tokens 10-12


@pytest.fixture(scope="module")
def prompt(tokenizer) -> prompts.EditPrompt:
    built = prompts.build(tokenizer, prompts.load_template("edit"), TEXT, "edit it", "")
    tokens = built.ids[built.input_start : built.input_end]
    assert tokenizer.decode(tokens[UNICODE_LINE.start : UNICODE_LINE.stop]) == TEXT[10:30]
    assert tokenizer.decode(tokens[10:11]).endswith("\ufffd")  # the tests rely on the split
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
    attribution.add(copy(prompt, ALPHA_LINE, x))
    attribution.add(copy(prompt, [5, 6, 7], kind=BRANCH))  # "naïve"
    attribution.add(copy(prompt, [8, 9]))  # " → café": a new kind starts a new span
    attribution.add(copy(prompt, [13, 14]))  # " done\n": a jump in the source does too

    spans = attribution.spans
    assert [(s.source, s.kind, s.tokens) for s in spans] == [
        ("input", MAIN, 5),
        (None, None, 1),
        ("input", BRANCH, 3),
        ("input", MAIN, 2),
        ("input", MAIN, 2),
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
    assert attribution.copied_share == pytest.approx(12 / 13)


def test_output_offsets_count_characters_when_a_character_spans_steps(prompt, decode, tokenizer):
    attribution = Attribution(prompt, decode)
    attribution.add(copy(prompt, [5, 6, 7, 8, 9, 10]))  # stops inside 🦜 (3 tokens)
    assert attribution.text == "naïve → café"  # the half parrot waits
    attribution.add(copy(prompt, [11, 12, 13, 14]))
    melting = ids(tokenizer, "🫠")
    assert len(melting) > 1  # the model's own character, also split over tokens
    attribution.add(copy(prompt, [], melting[:1]))
    attribution.add(copy(prompt, [], melting[1:]))

    assert attribution.text == "naïve → café 🦜 done\n🫠" == decode(attribution.tokens)
    copied, generated = attribution.spans
    assert (copied.tokens, generated.tokens) == (10, len(melting))
    assert copied.input == (10, 30) and copied.output == (0, 20)
    assert attribution.text[slice(*copied.output)] == TEXT[slice(*copied.input)]
    assert attribution.text[slice(*generated.output)] == "🫠"


def test_decoding_that_depends_on_context_keeps_the_spaces_between_steps(prompt, tokenizer):
    def decode(ids: list[int]) -> str:  # like SentencePiece: a text's leading space is dropped
        return tokenizer.decode(ids).lstrip(" ")

    attribution = Attribution(prompt, decode)
    for offsets in ([5, 6, 7], [8], [9], range(10, 15)):  # each step starts with a space
        attribution.add(copy(prompt, offsets))
    assert attribution.text == "naïve → café 🦜 done\n"


def test_sources_outside_the_input_and_relaxed_acceptances_are_labelled(prompt, decode):
    attribution = Attribution(prompt, decode)
    attribution.add(copy(prompt, [0, 1]))
    step = copy(prompt, [2, 3])
    step.relaxed = [True, False]  # CASD may add this; the Step need not declare it
    attribution.add(step)
    end = len(prompt.ids)  # positions past the prompt are earlier output: here "alpha"
    attribution.add(Step([prompt.ids[0], attribution.tokens[0]], [0, end], [MAIN, MAIN], 2))

    assert [(s.source, s.kind, s.input) for s in attribution.spans] == [
        ("input", MAIN, (0, 7)),
        ("input", RELAXED, (7, 8)),
        ("input", MAIN, (8, 9)),
        ("prompt", MAIN, None),
        ("output", MAIN, None),
    ]
    assert attribution.kinds == {MAIN: 5, RELAXED: 1}
    assert attribution.copied_share == pytest.approx(4 / 6)


def test_json_round_trips(prompt, decode, tokenizer):
    attribution = Attribution(prompt, decode)
    attribution.add(copy(prompt, UNICODE_LINE, ids(tokenizer, "ok")))
    record = json.loads(attribution.to_json())
    assert record["output"] == "naïve → café 🦜 done\nok"
    assert record["spans"] == [
        {"output": [0, 20], "input": [10, 30], "source": "input", "kind": MAIN, "tokens": 10},
        {"output": [20, 22], "input": None, "source": None, "kind": None, "tokens": 1},
    ]
    assert record["tokens_by_source"] == {"input": 10, GENERATED: 1}
    assert record["copied_share"] == round(10 / 11, 4)


def console(width: int = 80, height: int = 24) -> Console:
    return Console(record=True, width=width, height=height, file=io.StringIO(), force_terminal=True)


def fed(prompt, decode, tokenizer, screen: Console) -> Dashboard:
    """A dashboard after three passes: 12 tokens, 9 of 12 drafted accepted, 9 from the input."""
    dashboard = Dashboard(prompt, decode, 100, "edit notes.txt", screen)
    dashboard.on_step(copy(prompt, ALPHA_LINE, ids(tokenizer, "X"), drafted=6))
    dashboard.on_step(copy(prompt, [], ids(tokenizer, "Y"), drafted=2))
    dashboard.on_step(copy(prompt, [5, 6, 7, 8], ids(tokenizer, "Z"), drafted=4))
    return dashboard


def test_fits_an_80_by_24_terminal_and_shows_the_stats(prompt, decode, tokenizer):
    screen = console()
    screen.print(fed(prompt, decode, tokenizer, screen))
    lines = screen.export_text().splitlines()
    assert lines and max(cell_len(line) for line in lines) <= 80
    assert len(lines) <= 23
    stats = next(line for line in lines if "passes" in line)
    assert "3 passes" in stats
    assert "4.00 tok/pass" in stats  # 12 tokens over 3 passes
    assert "75% accepted" in stats  # 9 of 12 drafted
    assert "75% copied" in stats  # 9 of 12 tokens from the input
    assert any("12/100 tokens" in line for line in lines)
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
    assert "12 tokens in 2.0s, 6.0 tok/s, 4.00 tok/pass over 3 passes" in summary
    assert "75% of 12 accepted; 75% of the output copied" in summary


def test_only_a_terminal_gets_the_dashboard():
    assert dashboard_enabled(console())
    assert not dashboard_enabled(console(), quiet=True)
    assert not dashboard_enabled(Console(file=io.StringIO(), width=80, height=24))

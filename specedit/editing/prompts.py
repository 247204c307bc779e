"""Edit prompts: templates from templates/*.toml, the chat template, and getting the text back.

The answer is pre-filled with an opening code fence, so the model's first token is already file
content, and generation stops at the closing fence. The fence is longer than any backtick run in
the input (as CommonMark allows), so a Markdown file with its own code blocks is never cut short.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from specedit.editing.region import Surroundings

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".jsx": "jsx",
    ".rs": "rust",
    ".go": "go",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".php": "php",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "zsh",
    ".sql": "sql",
    ".html": "html",
    ".css": "css",
    ".scss": "scss",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".xml": "xml",
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".tex": "latex",
    ".lua": "lua",
    ".swift": "swift",
    ".cs": "csharp",
    ".r": "r",
    ".jl": "julia",
}


class PromptError(ValueError):
    """A prompt template is missing or malformed."""


@dataclass(frozen=True)
class Template:
    name: str
    description: str
    system: str
    user: str
    # The user's next turn when the model should first answer `user` in its own words (say
    # what is wrong and what it will change) and only then write the file: what asks for the
    # file. Empty: the answer to `user` is the file itself.
    then: str = ""
    # Worked examples, shown as earlier turns of the chat before the edit itself.
    examples: tuple[Example, ...] = ()


@dataclass(frozen=True)
class Example:
    """One worked edit: the instruction and input as the user would send them, and the whole
    answer the model should give."""

    instruction: str
    input: str
    output: str
    language: str = ""

    def messages(self, template: Template) -> list[dict[str, str]]:
        """The example as a user turn in the template's words and the assistant's answer (its
        code block alone, whatever the template's `then` words), laid out as an edit's own
        turn is: the instruction stripped, each code block ending with a newline."""
        given, wanted = with_final_newline(self.input), with_final_newline(self.output)
        fence = fence_for(given + wanted)
        user = _user_text(template, given, self.instruction, self.language, fence)
        answer = f"{fence}{self.language}\n{wanted}{fence}"
        return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]


TEMPLATE_KEYS = {"description", "system", "user", "then", "examples"}


def available() -> list[str]:
    """Names of the shipped prompt templates."""
    folder = resources.files("specedit.editing") / "templates"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load_template(name: str) -> Template:
    """Load templates/<name>.toml, or a template file given by path."""
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        source, name = path.read_text(encoding="utf-8"), path.stem
    else:
        resource = resources.files("specedit.editing") / "templates" / f"{name}.toml"
        if not resource.is_file():
            raise PromptError(f"unknown prompt {name!r}: choose one of {', '.join(available())}")
        source = resource.read_text(encoding="utf-8")
    data = tomllib.loads(source)
    missing = {"system", "user"} - data.keys()
    if missing:
        raise PromptError(f"prompt {name!r} lacks {', '.join(sorted(missing))}")
    if unknown := sorted(data.keys() - TEMPLATE_KEYS):
        known = ", ".join(sorted(TEMPLATE_KEYS))
        raise PromptError(f"prompt {name!r}: unknown key {unknown[0]!r} (a template has {known})")
    for field in ("{instruction}", "{text}", "{fence}"):
        if field not in data["user"]:
            raise PromptError(f"prompt {name!r}: its user text must contain {field}")
    try:
        examples = tuple(Example(**example) for example in data.get("examples", []))
    except TypeError as exc:
        fields = "instruction, input, output and language"
        raise PromptError(f"prompt {name!r}: an example takes {fields} ({exc})") from None
    return Template(
        name,
        data.get("description", ""),
        data["system"],
        data["user"],
        data.get("then", ""),
        examples,
    )


def language_for(path: str | None) -> str:
    """The code-fence language of a file name ('' when unknown or stdin)."""
    return LANGUAGES.get(Path(path).suffix.lower(), "") if path else ""


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in `text` (at least three)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def snippet_block(snippet: str, language: str = "") -> str:
    """A lazy edit snippet as `specedit apply` puts it in the prompt: in a code block of its own,
    fenced longer than any backtick run in it."""
    fence = fence_for(snippet)
    return f"{fence}{language}\n{snippet.rstrip(chr(10))}\n{fence}"


LEADING_BLANK_LINES = re.compile(r"(?:[ \t\r\f]*\n)*")


@dataclass(frozen=True)
class EditPrompt:
    """A rendered prompt: its token ids and what extraction needs to know."""

    ids: list[int]
    fence: str
    text: str  # the input text as given
    input_start: int  # token position where the input text starts in `ids`
    input_end: int
    asks_statement: bool = False  # the prompt asks for the model's statement, not the file
    # For token positions input_start .. input_end - 1: its character span in `text`, clipped.
    input_offsets: tuple[tuple[int, int], ...] = ()
    # Token positions of the instruction in `ids` (end exclusive; equal where it has none).
    instruction_start: int = 0
    instruction_end: int = 0

    @property
    def instruction(self) -> tuple[int, int] | None:
        """Where the instruction lies in `ids` (start, end), if the prompt has one."""
        start, end = self.instruction_start, self.instruction_end
        return (start, end) if end > start else None

    @property
    def leading_blank(self) -> str:
        """The input's leading blank lines, which no answer writes (`framed`)."""
        return self.text[: LEADING_BLANK_LINES.match(self.text).end()]

    @property
    def content_start(self) -> int | None:
        """The prompt position of the input's first token past its leading blank lines, where an
        answer that rewrites the input starts (None: the input is blank)."""
        blank = len(self.leading_blank)
        return next(
            (self.input_start + k for k, (_, end) in enumerate(self.input_offsets) if end > blank),
            None,
        )

    def input_span(self, position: int) -> tuple[int, int] | None:
        """The character span in the input of prompt token `position`, if it lies there."""
        if self.input_start <= position < self.input_end:
            return self.input_offsets[position - self.input_start]
        return None


# A region edit (`--lines`): the code block holds the region, the rest of the file follows it
# for context, and the template's instruction comes after both, so that a second instruction on
# the same region shares every token of the prompt before it (a warm server or a kept head
# prefills only what differs). The reminder at the end keeps the answer to the region: a model
# shown the file tends to answer with all of it, and one shown the rest first copies that.
REGION_CONTEXT = """

The code block above is lines {first}-{last} of a longer file. For context only, here {shown}, \
with those lines left out; do not return any of it:

{fence}{language}
{before}{gap}{after}{fence}"""
REGION_GAP = "... lines {first}-{last}: the code block above ...\n"
REGION_ANSWER = """

Your code block replaces lines {first}-{last} alone."""


def chat_messages(
    template: Template,
    body: str,
    instruction: str,
    language: str,
    fence: str,
    surroundings: Surroundings | None = None,
    statement: str | None = None,
) -> list[dict[str, str]]:
    """The system and user messages of an edit, `body` being what goes in the code block (the
    input ending with a newline); what any chat-completions server is sent. A region edit's
    `surroundings` follow its code block, with the region left out, before the instruction. A
    template with `then` words asks for the model's statement of the change first; given that
    `statement`, it is the model's turn and `then` the user's next, which asks for the file."""
    user = _user_text(template, body, instruction, language, fence)
    if surroundings:
        where = {"first": surroundings.first, "last": surroundings.last}
        before, after = surroundings.shown()
        window = surroundings.shown_lines()
        shown = f"are lines {window[0]}-{window[1]} of it" if window else "is the rest of that file"
        context = REGION_CONTEXT.format(
            fence=fence_for(before + after),
            language=language,
            shown=shown,
            before=before,
            gap=REGION_GAP.format(**where),
            after=after if not after or after.endswith("\n") else after + "\n",
            **where,
        )
        block = user.find(body + fence)  # a template of our own layout: the file's code block
        split = block + len(body + fence) if block >= 0 else len(user)
        user = user[:split] + context + user[split:] + REGION_ANSWER.format(**where)
    shown = [message for example in template.examples for message in example.messages(template)]
    messages = [
        {"role": "system", "content": template.system},
        *shown,
        {"role": "user", "content": user},
    ]
    if template.then and statement is not None:
        messages += [
            {"role": "assistant", "content": statement.strip()},
            {"role": "user", "content": template.then},
        ]
    return messages


def _user_text(template: Template, body: str, instruction: str, language: str, fence: str) -> str:
    """The template's user words around one code block (an edit's or a worked example's)."""
    return template.user.format(
        instruction=instruction.strip(), fence=fence, language=language, text=body
    )


def with_final_newline(text: str) -> str:
    """`text` as it goes in a code block: ending with a newline, so the fence has a line."""
    return text if text.endswith("\n") else text + "\n"


def build(
    tokenizer,
    template: Template,
    text: str,
    instruction: str,
    language: str,
    statement: str | None = None,
    surroundings: Surroundings | None = None,
) -> EditPrompt:
    """Render system + user through the chat template, with the answer's opening: the code
    fence. A template with `then` words asks for the model's statement first (`asks_statement`:
    the prompt ends where the model answers `user`); given that `statement`, the statement is
    the model's turn, `then` the user's next, and the answer to it opens with the fence."""
    fence = fence_for(text)
    body = with_final_newline(text)
    # Where the input and the instruction go, found again after the chat template.
    input_marker, instruction_marker = "\x00specedit-input\x00", "\x00specedit-instruction\x00"
    messages = chat_messages(
        template, input_marker, instruction_marker, language, fence, surroundings, statement
    )
    asks_statement = bool(template.then) and statement is None
    opening = "" if asks_statement else f"{fence}{language}\n"
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    texts = {input_marker: body, instruction_marker: instruction.strip()}
    rendered, chars = _filled(rendered, texts)
    encoding = tokenizer(rendered + opening, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoding["offset_mapping"]
    start_char = chars[input_marker][0]
    input_start, input_end = _token_span(offsets, *chars[input_marker])
    spans = tuple(
        (max(s - start_char, 0), min(e - start_char, len(text)))
        for s, e in offsets[input_start:input_end]
    )
    return EditPrompt(
        list(encoding["input_ids"]),
        fence,
        text,
        input_start,
        input_end,
        asks_statement,
        spans,
        *_token_span(offsets, *chars.get(instruction_marker, (0, 0))),
    )


def _filled(rendered: str, texts: dict[str, str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """`rendered` with each marker (the keys of `texts`) replaced by its text wherever it is,
    and the character span its first copy takes in the result (a marker not found has none)."""
    pieces = re.split(f"({'|'.join(map(re.escape, texts))})", rendered)
    chars: dict[str, tuple[int, int]] = {}
    length = 0
    for index, piece in enumerate(pieces):
        if index % 2:  # a marker
            pieces[index] = texts[piece]
            chars.setdefault(piece, (length, length + len(pieces[index])))
        length += len(pieces[index])
    return "".join(pieces), chars


def _token_span(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """The tokens that hold characters `start` .. `end` - 1 (end exclusive; none: (0, 0))."""
    if end <= start:
        return (0, 0)
    first = next(i for i, (_, e) in enumerate(offsets) if e > start)
    return first, next((i for i, (s, _) in enumerate(offsets) if s >= end), len(offsets))


def statement_of(answer: str) -> str:
    """The model's statement of the change in its answer: the words before any code block it
    went on to start (where the file would be)."""
    return re.split(r"```|~~~", answer, maxsplit=1)[0].strip()


FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")  # a line that opens or closes a code block
BARE_FENCE = re.compile(r"`{3,}[ \t]*")  # a closing backtick fence: no info string


class Closing:
    """Where the answer's code block ends, decided line by line.

    A line of our fence (or longer) always closes. When the input holds code blocks of its own,
    our fence is longer than theirs, but a model often closes with a plain ``` anyway and then
    keeps writing; so a bare backtick fence line beyond the fence lines the input has is taken as
    the close too (copying the input reproduces exactly its own fence lines).
    """

    def __init__(self, prompt: EditPrompt) -> None:
        self.ours = re.compile(rf"{prompt.fence}`*[ \t]*")
        self.input_fences = sum(bool(FENCE_LINE.match(line)) for line in prompt.text.splitlines())
        self.fences = 0

    def closes(self, line: str) -> bool:
        if self.ours.fullmatch(line):
            return True
        if not FENCE_LINE.match(line):
            return False
        self.fences += 1
        return self.fences > self.input_fences and bool(BARE_FENCE.fullmatch(line))


class AnswerText:
    """The answer's text as its tokens come, decoded a short window at a time: a few settled
    tokens of context (so context-dependent decoding, such as SentencePiece's leading spaces, is
    right) plus the new ones, so a token costs the same however long the answer is. A token
    that ends inside a character (byte-level BPE) waits until a later one completes it."""

    CONTEXT = 4  # settled tokens decoded before the new ones

    def __init__(self, decode: Callable[[list[int]], str]) -> None:
        self.decode = decode
        self.tokens: list[int] = []
        self.text = ""  # the text of the settled tokens
        self.settled = 0

    def add(self, tokens: list[int]) -> list[tuple[int, str]]:
        """Feed tokens; returns (tokens settled together, their text) for each group that
        settled, in order. The last tokens may stay pending."""
        self.tokens.extend(tokens)
        anchor = max(self.settled - self.CONTEXT, 0)
        done = len(self.decode(self.tokens[anchor : self.settled]))
        groups = []
        for k in range(self.settled, len(self.tokens)):
            piece = self.decode(self.tokens[anchor : k + 1])
            if piece.endswith("\ufffd"):  # ends inside a character: wait for the rest
                continue
            groups.append((k + 1 - self.settled, piece[done:]))
            self.text += piece[done:]
            done, self.settled = len(piece), k + 1
        return groups


class Lines:
    """The answer's lines as they complete, fed one token at a time (each token's text is
    decoded once and kept): what the stop conditions that read lines share."""

    def __init__(self, decode_token: Callable[[int], str]) -> None:
        self.decode_token = decode_token
        self.pieces: dict[int, str] = {}
        self.partial = ""  # the answer's current, unfinished line

    def feed(self, token: int) -> list[str]:
        """The lines `token` completes."""
        piece = self.pieces.get(token)
        if piece is None:
            piece = self.pieces[token] = self.decode_token(token)
        *done, self.partial = (self.partial + piece).split("\n")
        return done


class FenceStop:
    """Stop condition: the answer's closing fence line is complete (see `Closing`). In a region
    edit the answer is also done once it has written the two lines that follow the region
    (`Surroundings.landmark`): it is copying on past the region."""

    def __init__(
        self, tokenizer, prompt: EditPrompt, surroundings: Surroundings | None = None
    ) -> None:
        self.closing = Closing(prompt)
        self.lines = Lines(lambda token: tokenizer.decode([token]))
        self.landmark = surroundings.landmark() if surroundings else []
        self.recent: list[str] = []  # the answer's last two non-blank complete lines

    def __call__(self, token: int) -> bool:
        lines = self.lines.feed(token)
        closed = any([self.closing.closes(line) for line in lines])  # every line, in order
        if len(self.landmark) == 2:
            for line in filter(str.strip, lines):
                self.recent = [*self.recent[-1:], line]
            closed = closed or self.recent == self.landmark
        return closed


def extract(
    tokenizer, tokens: list[int], prompt: EditPrompt, surroundings: Surroundings | None = None
) -> str | None:
    """The edited text from the answer's tokens, or None if the answer was cut off.

    The answer ends at its closing fence line (`Closing`); an EOS ends it too (right after the
    fence, or when the model finished without one). The input's trailing newlines are kept as
    they were. A region edit's answer also ends where it went on past the region.
    """
    answer = tokenizer.decode(tokens, skip_special_tokens=True)
    finished = bool(tokens) and tokens[-1] in set(tokenizer.all_special_ids)
    cut = surroundings.overrun(answer) if surroundings else None
    if cut is not None:
        answer, finished = answer[:cut] + prompt.fence, True
    return extract_text(answer, finished, prompt)


def framed(text: str, prompt: EditPrompt) -> str:
    """An answer's `text` after the input's leading blank lines, as they were. An answer's
    first line follows its fence's line break, so a model writes no blank line there (a file's
    leading blank lines come in one token with the input fence's line break): they are not
    the answer's to drop. Applied to what is delivered; the passes after the model read the
    answer as it was written, line for line with its tokens."""
    if not prompt.text.strip():
        return text
    return prompt.leading_blank + text[LEADING_BLANK_LINES.match(text).end() :]


def extract_text(answer: str, finished: bool, prompt: EditPrompt) -> str | None:
    """`extract` on decoded text: `answer` starts after the opening fence line; `finished`
    says whether the model ended it (rather than a token limit)."""
    *lines, last = answer.split("\n")
    closing = Closing(prompt)
    end = next((i for i, line in enumerate(lines) if closing.closes(line)), None)
    if end is None and finished and closing.closes(last):
        end = len(lines)
    if end is None and not finished:
        return None
    body = "\n".join((*lines, last)[:end] if end is not None else (*lines, last)).rstrip("\n")
    return body + prompt.text[len(prompt.text.rstrip("\n")) :]

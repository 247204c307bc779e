"""Edit prompts: templates from prompts/*.toml, the chat template, and getting the text back.

The answer is pre-filled with an opening code fence, so the model's first token is already file
content, and generation stops at the closing fence. The fence is longer than any backtick run in
the input (as CommonMark allows), so a Markdown file with its own code blocks is never cut short.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
    ".ts": "typescript", ".tsx": "tsx", ".jsx": "jsx", ".rs": "rust", ".go": "go",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java",
    ".kt": "kotlin", ".rb": "ruby", ".php": "php", ".sh": "bash", ".bash": "bash",
    ".zsh": "zsh", ".sql": "sql", ".html": "html", ".css": "css", ".scss": "scss",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".xml": "xml",
    ".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text", ".tex": "latex",
    ".lua": "lua", ".swift": "swift", ".cs": "csharp", ".r": "r", ".jl": "julia",
}  # fmt: skip


class PromptError(ValueError):
    """A prompt template is missing or malformed."""


@dataclass(frozen=True)
class Template:
    name: str
    description: str
    system: str
    user: str


def available() -> list[str]:
    """Names of the shipped prompt templates."""
    folder = resources.files("specedit") / "prompts"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load_template(name: str) -> Template:
    """Load prompts/<name>.toml, or a template file given by path."""
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        source, name = path.read_text(encoding="utf-8"), path.stem
    else:
        resource = resources.files("specedit") / "prompts" / f"{name}.toml"
        if not resource.is_file():
            raise PromptError(f"unknown prompt {name!r}: choose one of {', '.join(available())}")
        source = resource.read_text(encoding="utf-8")
    data = tomllib.loads(source)
    missing = {"system", "user"} - data.keys()
    if missing:
        raise PromptError(f"prompt {name!r} lacks {', '.join(sorted(missing))}")
    for field in ("{instruction}", "{text}", "{fence}"):
        if field not in data["user"]:
            raise PromptError(f"prompt {name!r}: its user text must contain {field}")
    return Template(name, data.get("description", ""), data["system"], data["user"])


def language_for(path: str | None) -> str:
    """The code-fence language of a file name ('' when unknown or stdin)."""
    return LANGUAGES.get(Path(path).suffix.lower(), "") if path else ""


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in `text` (at least three)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


@dataclass(frozen=True)
class EditPrompt:
    """A rendered prompt: its token ids and what extraction needs to know."""

    ids: list[int]
    fence: str
    text: str  # the input text as given
    input_start: int  # token position where the input text starts in `ids`
    input_end: int
    # For token positions input_start .. input_end - 1: its character span in `text`, clipped.
    input_offsets: tuple[tuple[int, int], ...] = ()

    def input_span(self, position: int) -> tuple[int, int] | None:
        """The character span in the input of prompt token `position`, if it lies there."""
        if self.input_start <= position < self.input_end:
            return self.input_offsets[position - self.input_start]
        return None


def build(tokenizer, template: Template, text: str, instruction: str, language: str) -> EditPrompt:
    """Render system + user through the chat template, with the answer's opening fence."""
    fence = fence_for(text)
    body = text if text.endswith("\n") else text + "\n"
    user = template.user.format(
        instruction=instruction.strip(), fence=fence, language=language, text=body
    )
    messages = [{"role": "system", "content": template.system}, {"role": "user", "content": user}]
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    rendered += f"{fence}{language}\n"
    encoding = tokenizer(rendered, add_special_tokens=False, return_offsets_mapping=True)
    start_char = rendered.index(body, rendered.index(instruction.strip()))
    end_char = start_char + len(body)
    offsets = encoding["offset_mapping"]
    input_start = next(i for i, (s, e) in enumerate(offsets) if e > start_char)
    input_end = next((i for i, (s, _) in enumerate(offsets) if s >= end_char), len(offsets))
    spans = tuple(
        (max(s - start_char, 0), min(e - start_char, len(text)))
        for s, e in offsets[input_start:input_end]
    )
    return EditPrompt(list(encoding["input_ids"]), fence, text, input_start, input_end, spans)


class FenceStop:
    """Stop condition: a line that is only the closing fence (as long as ours, or longer)."""

    def __init__(self, tokenizer, fence: str) -> None:
        self.tokenizer = tokenizer
        self.pattern = re.compile(rf"(?:^|\n){fence}`*[ \t]*\n")
        self.pieces: dict[int, str] = {}
        self.tail = "\n"  # the answer starts on a fresh line, right after the opening fence
        self.keep = len(fence) + 64

    def __call__(self, token: int) -> bool:
        piece = self.pieces.get(token)
        if piece is None:
            piece = self.pieces[token] = self.tokenizer.decode([token])
        self.tail = (self.tail + piece)[-self.keep :]
        return bool(self.pattern.search(self.tail))


def extract(tokenizer, tokens: list[int], prompt: EditPrompt) -> str | None:
    """The edited text from the answer's tokens, or None if the answer was cut off.

    The answer ends at a closing fence line; an EOS ends it too (right after the fence, or when
    the model finished without one). The input's trailing newlines are kept as they were.
    """
    answer = "\n" + tokenizer.decode(tokens, skip_special_tokens=True)
    finished = bool(tokens) and tokens[-1] in set(tokenizer.all_special_ids)
    end = "(?:\n|$)" if finished else "\n"
    match = re.search(rf"\n{prompt.fence}`*[ \t]*{end}", answer)
    if match is None and not finished:
        return None
    body = answer[1 : match.start() if match else None].rstrip("\n")
    return body + prompt.text[len(prompt.text.rstrip("\n")) :]

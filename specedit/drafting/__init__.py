"""Ways of drafting, each one small class behind the engine's `Drafter` interface; the registry
names them. Drafting reads the engine's memory and returns draft trees; it never runs the model.

Drafters come in families, a folder each: `copying` (copies of earlier text) and `model` (a draft
model's chains, beside copies); what they share lies here (node kinds, artefacts, vocabulary
indexes)."""


class DrafterUnavailable(Exception):
    """A drafter cannot be built: an artefact it needs is missing or stale; the message says
    which command makes it."""

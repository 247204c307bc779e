"""The copy drafters: each drafts what followed an earlier occurrence of the context, in the
prompt, the answer so far or the draft pool, and reads no draft model."""

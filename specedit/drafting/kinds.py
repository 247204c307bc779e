"""Names drafters give the nodes of their trees; the engine passes them through untouched, and the
dashboard and the stats use them to tell where accepted tokens came from."""

MAIN = "main"  # the main copy: what followed the chosen earlier occurrence
BRANCH = "branch"  # an alternative first token (the model's top-K at the anchor)
SUCCESSOR = "successor"  # what followed a branch token elsewhere in memory
POOL = "pool"  # a continuation from the draft pool (input and reference files)
MODEL = "model"  # proposed by a draft model (the hybrid drafter)

"""Adaptive Replacement Cache (Megiddo and Modha, 2003): the budget policy of EvoSpec's dynamic
vocabulary.

ARC splits its capacity between tokens seen once recently (T1) and tokens seen again (T2), and
learns the split from ghost lists (B1, B2) that remember what each side evicted: a request that
hits a ghost of T1 says T1 was too small, one that hits a ghost of T2 says the opposite. A
retrieval burst (a topic's words) thus cannot flush the tokens the document keeps using.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator


class ARC:
    """A set of at most `capacity` keys kept by ARC; `request` is one access."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.target = 0  # ARC's p: the share of the capacity T1 aims for, learned from ghosts
        self._t1: OrderedDict[Hashable, None] = OrderedDict()  # LRU first, MRU last
        self._t2: OrderedDict[Hashable, None] = OrderedDict()
        self._b1: OrderedDict[Hashable, None] = OrderedDict()
        self._b2: OrderedDict[Hashable, None] = OrderedDict()

    def __contains__(self, key: Hashable) -> bool:
        return key in self._t1 or key in self._t2

    def __len__(self) -> int:
        return len(self._t1) + len(self._t2)

    def __iter__(self) -> Iterator[Hashable]:
        yield from self._t1
        yield from self._t2

    def request(self, key: Hashable) -> bool:
        """Access `key`: admit it or promote it. Returns whether the resident set changed."""
        if key in self._t1:  # a second hit: from recent to frequent
            del self._t1[key]
            self._t2[key] = None
            return False
        if key in self._t2:
            self._t2.move_to_end(key)
            return False
        if key in self._b1:  # T1 evicted it too early: grow T1's share
            self.target = min(self.capacity, self.target + max(len(self._b2) // len(self._b1), 1))
            self._replace(in_b2=False)
            del self._b1[key]
            self._t2[key] = None
            return True
        if key in self._b2:  # T2 evicted it too early: grow T2's share
            self.target = max(0, self.target - max(len(self._b1) // len(self._b2), 1))
            self._replace(in_b2=True)
            del self._b2[key]
            self._t2[key] = None
            return True
        # A new key (the paper's case IV).
        if len(self._t1) + len(self._b1) == self.capacity:
            if len(self._t1) < self.capacity:
                self._b1.popitem(last=False)
                self._replace(in_b2=False)
            else:
                self._t1.popitem(last=False)
        else:
            total = len(self._t1) + len(self._b1) + len(self._t2) + len(self._b2)
            if total >= self.capacity:
                if total == 2 * self.capacity:
                    self._b2.popitem(last=False)
                self._replace(in_b2=False)
        self._t1[key] = None
        return True

    def _replace(self, in_b2: bool) -> None:
        """Evict one resident key into its ghost list, from T1 or T2 by the learned target."""
        if len(self) < self.capacity:
            return
        if self._t1 and (len(self._t1) > self.target or (in_b2 and len(self._t1) == self.target)):
            key, _ = self._t1.popitem(last=False)
            self._b1[key] = None
        else:
            key, _ = self._t2.popitem(last=False)
            self._b2[key] = None

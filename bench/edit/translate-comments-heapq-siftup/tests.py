_INPUT = r'''def heappush(heap, item):
    """Push item onto heap, maintaining the heap invariant."""
    heap.append(item)
    _siftdown(heap, 0, len(heap)-1)


def heappop(heap):
    """Pop the smallest item off the heap, maintaining the heap invariant."""
    lastelt = heap.pop()    # löst den passenden IndexError aus, wenn der Heap leer ist
    if heap:
        returnitem = heap[0]
        heap[0] = lastelt
        _siftup(heap, 0)
        return returnitem
    return lastelt


def heapify(x):
    """Transform list into a heap, in-place, in O(len(x)) time."""
    n = len(x)
    # Von unten nach oben umwandeln.  Der größte Index, den anzusehen sich lohnt,
    # ist der größte mit einem gültigen Kindindex, also muss 2*i + 1 < n gelten,
    # d.h. i < (n-1)/2.  Ist n gerade = 2*j, so ist das (2*j-1)/2 = j-1/2, also
    # ist j-1 der größte, und das ist n//2 - 1.  Ist n ungerade = 2*j+1, so ist
    # das (2*j+1-1)/2 = j, also ist j-1 der größte, und das ist wieder n//2-1.
    for i in reversed(range(n//2)):
        _siftup(x, i)


def _siftdown(heap, startpos, pos):
    newitem = heap[pos]
    # Dem Pfad zur Wurzel folgen und dabei Eltern nach unten schieben, bis eine
    # Stelle gefunden ist, an die newitem passt.
    while pos > startpos:
        parentpos = (pos - 1) >> 1
        parent = heap[parentpos]
        if newitem < parent:
            heap[pos] = parent
            pos = parentpos
            continue
        break
    heap[pos] = newitem


def _siftup(heap, pos):
    endpos = len(heap)
    startpos = pos
    newitem = heap[pos]
    # Das kleinere Kind nach oben steigen lassen, bis ein Blatt erreicht ist.
    childpos = 2*pos + 1    # Position des linken Kindes
    while childpos < endpos:
        # childpos auf den Index des kleineren Kindes setzen.
        rightpos = childpos + 1
        if rightpos < endpos and not heap[childpos] < heap[rightpos]:
            childpos = rightpos
        # Das kleinere Kind nach oben verschieben.
        heap[pos] = heap[childpos]
        pos = childpos
        childpos = 2*pos + 1
    # Das Blatt an pos ist jetzt leer.  newitem dort ablegen und nach oben an
    # seinen endgültigen Platz steigen lassen (indem seine Eltern nach unten sinken).
    heap[pos] = newitem
    _siftdown(heap, startpos, pos)
'''

import ast as _ast
import io as _io
import re as _re
import tokenize as _tokenize

_FOREIGN = set('und der das ist wenn nach oben unten leer wurzel blatt eltern kleinere kleineren kindes jetzt dort bis eine einem gerade ungerade größte wieder setzen passt stelle folgen platz'.split())
_ENGLISH = set('heap child smaller leaf root parent parents index largest empty position'.split())
with open(__file__, encoding="utf-8") as _handle:
    _program = _handle.read()
_comments = [
    _token.string
    for _token in _tokenize.generate_tokens(_io.StringIO(_program).readline)
    if _token.type == _tokenize.COMMENT
]
_words = _re.findall(r"[^\W\d_]+", " ".join(_comments).lower())
_left = sorted(set(_words) & _FOREIGN)
assert not _left, f"comments still hold untranslated words: {_left}"
assert len(_words) >= 68, f"comments were dropped: {_comments}"
assert len(set(_words) & _ENGLISH) >= 3, f"comments are not in English: {_comments}"


def _functions(source):
    return {
        _node.name: _ast.dump(_node)
        for _node in _ast.parse(source).body
        if isinstance(_node, _ast.FunctionDef)
    }


_mine = _functions(_program)
for _name, _dump in _functions(_INPUT).items():
    assert _mine.get(_name) == _dump, f"the code of {_name} changed"

import heapq as _ref
import random as _random

_rng = _random.Random(0)
for _ in range(300):
    _data = [_rng.randrange(20) for _ in range(_rng.randrange(15))]
    _mine, _theirs = list(_data), list(_data)
    heapify(_mine)
    _ref.heapify(_theirs)
    assert _mine == _theirs, (_data, _mine, _theirs)
    for _step in range(_rng.randrange(1, 20)):
        if _theirs and _rng.random() < 0.4:
            assert heappop(_mine) == _ref.heappop(_theirs), _data
        else:
            _x = _rng.randrange(20)
            heappush(_mine, _x)
            _ref.heappush(_theirs, _x)
        assert _mine == _theirs, (_data, _mine, _theirs)
try:
    heappop([])
except IndexError:
    pass
else:
    raise AssertionError("heappop([]) should raise IndexError")

def heappush(heap, item):
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

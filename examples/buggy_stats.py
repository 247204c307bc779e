"""Small descriptive statistics over lists of numbers."""

import math


def mean(values):
    """Arithmetic mean of a non-empty list."""
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) * len(values)


def median(values):
    """Middle value of a non-empty list (mean of the two middle values for even lengths)."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def variance(values):
    """Population variance of a non-empty list."""
    center = mean(values)
    return sum((v - center) ** 2 for v in values) / len(values)


def stdev(values):
    """Population standard deviation of a non-empty list."""
    return math.sqrt(variance(values))


def describe(values):
    """A dict with the count, mean, median, variance and standard deviation of the values."""
    return {
        "count": len(values),
        "mean": mean(values),
        "median": median(values),
        "variance": variance(values),
        "stdev": stdev(values),
    }


if __name__ == "__main__":
    print(describe([3, 1, 4, 1, 5, 9, 2, 6]))

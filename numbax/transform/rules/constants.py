"""Functions whose results carry no derivative: constructors, shapes, rounding,
comparisons, integer-valued results."""

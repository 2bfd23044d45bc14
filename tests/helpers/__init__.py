"""Helpers the tests share: finite-difference derivatives and checks of numbax's against
them (``fd``), comparisons of pytrees leaf by leaf (``trees``), and small programs covering
the core language with example arguments (``programs``)."""

"""normalize: same results as the original, core grammar, user lines, clear refusals."""

import ast
import copy
import importlib
import inspect
import random
import textwrap

import gast
import numpy as np
import pytest
from normalize_corpus import CASES, V

from numbax.errors import TransformError
from numbax.transform.normalize import CoreGrammarError, check_core, normalize
from numbax.transform.source import FunctionSource, read_function
from tests.helpers.source import line_of

CORPUS = [pytest.param(fn, inputs, id=fn.__name__) for fn, inputs in CASES]
CORPUS_FUNCTIONS = [pytest.param(fn, id=fn.__name__) for fn, _ in CASES]


def unparse(tree):
    return ast.unparse(ast.Module(body=[gast.gast_to_ast(tree)], type_ignores=[]))


def normalized_source(fn):
    return unparse(normalize(read_function(fn)))


def load(source, tree):
    """The function of ``tree``, run from its source in the namespace of ``source``."""
    namespace = {**source.globals, **source.closure}
    exec(unparse(tree), namespace)
    return namespace[tree.name]


def load_normalized(fn):
    source = read_function(fn)
    return load(source, normalize(source))


def outcome(fn, inputs):
    """Result and arguments after the call (they may be mutated), or the exception."""
    args = copy.deepcopy(inputs)
    try:
        result = fn(*args)
    except Exception as err:  # the normalized code must fail the same way
        return ("raised", type(err), str(err))
    return ("returned", result, args)


def assert_same(actual, expected):
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        np.testing.assert_array_equal(actual, expected)
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_same(a, e)
    elif isinstance(expected, dict):
        assert type(actual) is dict and list(actual) == list(expected)
        for key in expected:
            assert_same(actual[key], expected[key])
    else:
        assert type(actual) is type(expected)
        assert actual == expected or (actual != actual and expected != expected)


def statements(fn_tree):
    for node in gast.walk(fn_tree):
        if isinstance(node, gast.stmt) and node is not fn_tree:
            yield node


def test_corpus_covers_enough_functions():
    assert len(CASES) >= 60


@pytest.mark.parametrize("fn, inputs", CORPUS)
def test_normalized_computes_the_same(fn, inputs):
    lowered = load_normalized(fn)
    for args in inputs:
        assert_same(outcome(lowered, args), outcome(fn, args))


@pytest.mark.parametrize("fn", CORPUS_FUNCTIONS)
def test_output_is_core_language(fn):
    check_core(normalize(read_function(fn)))


@pytest.mark.parametrize("fn", CORPUS_FUNCTIONS)
def test_every_statement_has_a_line_of_the_function(fn):
    source = read_function(fn)
    lines, first = inspect.getsourcelines(fn)
    last = first + len(lines) - 1
    for stmt in statements(normalize(source)):
        assert first <= stmt.lineno <= last, gast.dump(stmt)
        text = source.line(stmt.lineno)
        if isinstance(stmt, gast.For):
            assert "for " in text
        if isinstance(stmt, gast.While):
            assert text.startswith("while ")


@pytest.mark.parametrize("fn", CORPUS_FUNCTIONS)
def test_source_tree_is_not_mutated(fn):
    source = read_function(fn)
    before = gast.dump(source.tree, include_attributes=True)
    normalize(source)
    assert gast.dump(source.tree, include_attributes=True) == before


@pytest.mark.parametrize("fn", CORPUS_FUNCTIONS)
def test_signature_and_name_are_kept(fn):
    source = read_function(fn)
    tree = normalize(source)
    assert tree.name == source.tree.name
    assert gast.dump(tree.args) == gast.dump(source.tree.args)


@pytest.mark.parametrize("fn", CORPUS_FUNCTIONS)
def test_no_dead_temporaries(fn):
    source = read_function(fn)
    user_names = {n.id for n in gast.walk(source.tree) if isinstance(n, gast.Name)}
    tree = normalize(source)
    written = {
        n.id
        for n in gast.walk(tree)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and n.id not in user_names
    }
    read = {
        n.id for n in gast.walk(tree) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
    }
    assert written <= read, written - read


# -- readability ----------------------------------------------------------------------------
def sigmoid_sum(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def first_positive(x):
    for i in range(x.shape[0]):
        if x[i] > 0:
            return i
    return -1


def clipped(x, lo):
    y = np.exp(x) + 1
    if y.sum() > lo and lo > 0:
        y = y / y.sum()
    elif lo < 0:
        return -y
    return y.reshape(-1)


def reads(text):
    return textwrap.dedent(text).strip()


def test_straight_line_reads_like_examples():
    assert normalized_source(sigmoid_sum) == reads("""
        def sigmoid_sum(x):
            _neg = -x
            _exp = np.exp(_neg)
            _add = 1.0 + _exp
            _div = 1.0 / _add
            _sum = np.sum(_div)
            return _sum
    """)


def test_early_return_in_loop_reads_well():
    assert normalized_source(first_positive) == reads("""
        def first_positive(x):
            _returned = False
            _x_shape = x.shape
            _x_shape_at = _x_shape[0]
            for i in range(_x_shape_at):
                _x_at = x[i]
                _gt = _x_at > 0
                if _gt:
                    _result = i
                    _returned = True
                    break
            _not_returned = not _returned
            if _not_returned:
                _result = -1
            return _result
    """)


def test_top_level_returns_are_restructured_without_flags():
    assert normalized_source(clipped) == reads("""
        def clipped(x, lo):
            _exp = np.exp(x)
            y = _exp + 1
            _sum = y.sum()
            _and = _sum > lo
            if _and:
                _and = lo > 0
            if _and:
                _sum_2 = y.sum()
                y = y / _sum_2
                _result = y.reshape(-1)
            else:
                _lt = lo < 0
                if _lt:
                    _result = -y
                else:
                    _result = y.reshape(-1)
            return _result
    """)


def collides(x):
    _exp = 2.0
    return np.exp(x) * _exp


def test_temporaries_never_clash_with_user_names():
    text = normalized_source(collides)
    assert "_exp_2 = np.exp(x)" in text
    assert "return _mul" in text


# -- line numbers ----------------------------------------------------------------------------
def loop_with_lines(x):
    total = 0.0
    for v in x:
        if v > 0 and v < 10:
            total += v * 2
    while total > 100:
        total /= 2
    return total


def test_lowered_pieces_carry_their_user_line():
    tree = normalize(read_function(loop_with_lines))
    by_text = {}
    for stmt in statements(tree):
        head = gast.unparse(stmt).splitlines()[0]
        by_text.setdefault(head, set()).add(stmt.lineno)
    assert by_text["total = 0.0"] == {line_of(loop_with_lines, "total = 0.0")}
    assert by_text["_n = len(x)"] == {line_of(loop_with_lines, "for v in x")}
    assert by_text["for _i in range(_n):"] == {line_of(loop_with_lines, "for v in x")}
    assert by_text["v = x[_i]"] == {line_of(loop_with_lines, "for v in x")}
    assert by_text["_and = v > 0"] == {line_of(loop_with_lines, "if v > 0")}
    assert by_text["_mul = v * 2"] == {line_of(loop_with_lines, "total += v")}
    # the condition of the while is recomputed at the end of its body: the header line
    assert by_text["_gt = total > 100"] == {line_of(loop_with_lines, "while total")}
    assert by_text["return total"] == {line_of(loop_with_lines, "return total")}


def test_pieces_of_a_multi_line_statement_share_its_first_line():
    from normalize_corpus import multi_line_statement

    tree = normalize(read_function(multi_line_statement))
    first = line_of(multi_line_statement, "total = (")
    assert [s.lineno for s in tree.body[:-1]] == [first] * (len(tree.body) - 1)
    assert all(s.end_lineno == s.lineno for s in tree.body)


# -- the validator ----------------------------------------------------------------------------
def not_core(x):
    if x > 0:
        return x + 1
    return np.exp(x * 2)


def test_check_core_rejects_user_code():
    with pytest.raises(CoreGrammarError, match="line"):
        check_core(read_function(not_core).tree)


def test_check_core_accepts_the_lowered_version():
    check_core(normalize(read_function(not_core)))


# -- shadowed builtins ------------------------------------------------------------------------
def make_user_range_loop():
    def range(n):  # the loop below calls this, not the builtin
        return [n]

    def loops_over_user_range(n):
        total = 0
        for i in range(n):
            total += i
        return total

    return loops_over_user_range


loops_over_user_range = make_user_range_loop()


def loops_with_len_parameter(x, len):
    total = 0
    for v in x:
        total += v * len
    return total


def test_a_user_range_is_not_the_builtin():
    with pytest.raises(TransformError, match="name 'range' that is not the builtin") as info:
        normalize(read_function(loops_over_user_range))
    assert info.value.lineno == line_of(loops_over_user_range, "for i in range(n)")


def test_a_parameter_hiding_a_needed_builtin_is_refused():
    with pytest.raises(TransformError, match="parameter named 'len'"):
        normalize(read_function(loops_with_len_parameter))


def test_a_local_range_is_renamed_and_iterated():
    from normalize_corpus import shadowed_range_local

    text = normalized_source(shadowed_range_local)
    assert "_range = custom_range" in text
    assert "_len = 7" in text


# -- rejected constructs ----------------------------------------------------------------------
class Box:
    value = 0


def uses_try(x):
    try:  # rejected
        return x
    except ValueError:
        return 0


def uses_with(x):
    with open(x) as f:  # rejected
        return f


def uses_yield(x):
    yield x  # rejected


def uses_yield_from(x):
    yield from x  # rejected


def uses_global(x):
    global Box  # rejected
    return x


def make_nonlocal():
    count = 0

    def uses_nonlocal(x):
        nonlocal count  # rejected
        count += x
        return count

    return uses_nonlocal


uses_nonlocal = make_nonlocal()


def uses_escaping_closure(x):
    def inner(y):
        return y * x

    return inner  # rejected


def uses_decorated_nested_def(x):
    @staticmethod
    def inner(y):  # rejected
        return y

    return inner(x)


def uses_class(x):
    class Local:  # rejected
        pass

    return x


def uses_del(x):
    y = x
    del y  # rejected
    return x


def uses_import(x):
    import math  # rejected

    return math.sqrt(x)


def uses_match(x):
    match x:  # rejected
        case 0:
            return 1
    return 0


def uses_starred_call(x):
    return np.add(*x)  # rejected


def uses_starred_target(x):
    a, *rest = x  # rejected
    return a


def uses_double_star(x, options):
    return np.sum(x, **options)  # rejected


def uses_varargs(*args):  # rejected
    return args


def uses_kwargs(x, **kwargs):  # rejected
    return x


def uses_generator_expression(x):
    return sum(v for v in x)  # rejected


def uses_set_comprehension(x):
    return {v for v in x}  # rejected


def uses_fstring(x):
    print(f"x = {x}")  # rejected
    return x


def uses_attribute_store(box, x):
    box.value = x  # rejected
    return x


def uses_attribute_augmented(box, x):
    box.value += x  # rejected
    return x


def uses_bare_raise(x):
    if x:
        raise  # rejected
    return x


def uses_raise_from(x):
    raise ValueError("bad") from None  # rejected


def uses_dict_view_loop(d):
    total = 0
    for _k, v in d.items():  # rejected
        total += v
    return total


async def uses_async(x):  # rejected
    return x


REJECTED = [
    (uses_try, "try"),
    (uses_with, "with"),
    (uses_yield, "yield"),
    (uses_yield_from, "yield from"),
    (uses_global, "global"),
    (uses_nonlocal, "nonlocal"),
    (uses_escaping_closure, "as a value"),
    (uses_decorated_nested_def, "decorated nested function"),
    (uses_class, "class"),
    (uses_del, "del"),
    (uses_import, "import"),
    (uses_match, "match"),
    (uses_starred_call, "starred"),
    (uses_starred_target, "starred"),
    (uses_double_star, "**"),
    (uses_varargs, "*args"),
    (uses_kwargs, "**kwargs"),
    (uses_generator_expression, "generator expression"),
    (uses_set_comprehension, "set comprehension"),
    (uses_fstring, "f-string"),
    (uses_attribute_store, "attribute"),
    (uses_attribute_augmented, "attribute"),
    (uses_bare_raise, "bare raise"),
    (uses_raise_from, "from"),
    (uses_dict_view_loop, ".items()"),
]


@pytest.mark.parametrize(
    "fn, construct", [pytest.param(fn, c, id=fn.__name__) for fn, c in REJECTED]
)
def test_rejected_construct_is_named_with_function_file_and_line(fn, construct):
    with pytest.raises(TransformError) as info:
        normalize(read_function(fn), transformation="grad")
    message = str(info.value)
    line = line_of(fn, "# rejected")
    assert construct in message
    assert "numbax.grad" in message
    assert repr(fn.__qualname__) in message
    assert f"{__file__}, line {line}" in message
    assert info.value.lineno == line
    assert construct in info.value.construct


def test_async_def_is_refused():
    with pytest.raises(TransformError):
        normalize(read_function(uses_async))  # read_function finds no plain def
    tree = gast.parse(inspect.getsource(uses_async)).body[0]
    source = FunctionSource(uses_async, tree, __file__, 1, globals())
    with pytest.raises(TransformError, match="an async def"):
        normalize(source)


def test_rejections_say_what_to_do_instead():
    with pytest.raises(TransformError, match="list comprehension"):
        normalize(read_function(uses_generator_expression))
    with pytest.raises(TransformError, match="return the new value"):
        normalize(read_function(uses_attribute_store))


def test_corpus_inputs_are_not_shared_between_runs():
    # outcome() copies arguments, so in-place corpus functions cannot corrupt V
    np.testing.assert_array_equal(V, np.array([1.5, -2.0, 0.25, 3.0, -0.5]))


# -- random control flow ---------------------------------------------------------------------
# Early returns, break/continue, loop-else and short-circuit conditions interact in many
# ways; small random programs cover combinations no hand-written corpus lists.
CONDITIONS = ["x > a", "y % 3 == 0", "a < x < b", "x and y", "not (x or y)", "(x if y else a) > 1"]
SIMPLE = ["x = x + 1", "y = y * 2 - a", "x, y = y, x + 1", "t.append(x)", "x += y % 5"]
ITERABLES = ["range(n)", "range(1, b, 2)", "enumerate([3, 1, 4])", "reversed(range(n))"]


def random_block(r, depth, in_loop, indent):
    return [line for _ in range(r.randint(1, 3)) for line in random_stmt(r, depth, in_loop, indent)]


def random_stmt(r, depth, in_loop, indent):
    pad, roll, inner = "    " * indent, r.random(), depth + 1
    if depth < 3 and roll < 0.2:
        lines = [f"{pad}if {r.choice(CONDITIONS)}:", *random_block(r, inner, in_loop, indent + 1)]
        if r.random() < 0.5:
            lines += [f"{pad}else:", *random_block(r, inner, in_loop, indent + 1)]
        return lines
    if depth < 3 and roll < 0.35:
        iterable = r.choice(ITERABLES)
        target = f"i{depth}, _v{depth}" if iterable.startswith("enum") else f"i{depth}"
        if r.random() < 0.5:
            header = [f"{pad}for {target} in {iterable}:"]
        else:
            header = [f"{pad}w{depth} = 0", f"{pad}while w{depth} < 3 and x < 50:"]
            header.append(f"{pad}    w{depth} += 1")
        lines = header + random_block(r, inner, True, indent + 1)
        if r.random() < 0.3:
            lines += [f"{pad}else:", *random_block(r, inner, in_loop, indent + 1)]
        return lines
    if roll < 0.45:
        return [f"{pad}return x + {r.randint(0, 9)}, y, t"]
    if in_loop and roll < 0.55:
        return [pad + r.choice(["break", "continue"])]
    return [pad + r.choice(SIMPLE)]


def random_program(seed):
    r = random.Random(seed)
    body = ["    x, y, t = a, b, []", *random_block(r, 0, False, 1), *random_block(r, 0, False, 1)]
    if r.random() < 0.7:
        body.append("    return x, y, t")
    return "\n".join([f"def program_{seed}(a, b, n):", *body]) + "\n"


def test_random_control_flow_programs(tmp_path, monkeypatch):
    seeds = range(100)
    (tmp_path / "random_programs.py").write_text("\n\n".join(random_program(s) for s in seeds))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("random_programs")
    for seed in seeds:
        fn = getattr(module, f"program_{seed}")
        source = read_function(fn)
        tree = normalize(source)
        check_core(tree)
        lowered = load(source, tree)
        for args in [(0, 0, 0), (1, 2, 3), (3, 1, 5), (-2, 7, 2), (5, 5, 4)]:
            assert outcome(lowered, args) == outcome(fn, args), random_program(seed)

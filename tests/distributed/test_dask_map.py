"""``nx.distributed.map`` on an in-process Dask cluster: bit-identical to
``nx.jit(nx.vmap(f, method="loop"))``, pytrees and axes, unmapped arguments scattered,
``nx.pmap`` with Dask's devices, an example's exception at the user's line, and what
is refused (collectives, lambdas). ``import numbax`` never imports Dask."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("distributed")

from distributed import Client, LocalCluster  # noqa: E402

import numbax as nx  # noqa: E402
from tests.api.test_pmap_threads import assert_identical  # noqa: E402
from tests.helpers.source import line_of  # noqa: E402

TIMEOUT = 120  # seconds a map may take here before the test fails

RNG = np.random.default_rng(3)
W = RNG.normal(size=(3, 40))  # unmapped, over the size scattered once to the workers
XS = RNG.normal(size=(13, 3))


def layer(w, x):
    """A pytree result with a matrix product and a reduction (bits depend on order)."""
    h = np.tanh(x @ w)
    return {"h": h, "s": (np.sum(h * h), np.log1p(np.abs(x).sum()))}


def checked(x):
    if x[0] > 1.5:
        raise ValueError("x too large")
    return np.sqrt(np.abs(x)) * 2.0


def pid_scaled(x):
    return x * os.getpid()  # Numba cannot compile os.getpid


def centered(x):
    total = nx.lax.psum(x, "i")
    return x - total


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def reference():
    return nx.jit(nx.vmap(layer, in_axes=(None, 0), method="loop"))(W, XS)


@pytest.mark.parametrize("batch_size", [None, 1, 5])
def test_bit_identical_to_the_vmap_loop(client, reference, batch_size, monkeypatch) -> None:
    monkeypatch.setattr(nx.distributed, "_seconds_per_example", {})  # its first map
    got = nx.distributed.map(
        layer, W, XS, in_axes=(None, 0), batch_size=batch_size, timeout=TIMEOUT
    )
    assert_identical(got, reference)
    report = nx.distributed.last_report()
    assert report.examples == 13
    assert report.batch_size == (batch_size or 2)  # about four batches a worker thread
    assert report.batches == -(-13 // report.batch_size)


def test_batches_last_long_enough_once_a_map_has_timed_the_function(
    client, reference, monkeypatch
) -> None:
    """Four batches a worker thread at a function's first map; then fewer where an
    example's measured cost makes those shorter than BATCH_SECONDS (one a thread here:
    an example takes microseconds), all four again where they are long enough."""
    monkeypatch.setattr(nx.distributed, "_seconds_per_example", {})
    batches = []
    for batch_seconds in (0.05, 0.05, 1e-12):
        monkeypatch.setattr(nx.distributed, "BATCH_SECONDS", batch_seconds)
        got = nx.distributed.map(layer, W, XS, in_axes=(None, 0))
        assert_identical(got, reference)
        batches.append(nx.distributed.last_report().batches)
    assert batches == [7, 2, 7]


def test_pmap_on_dask_devices(client, reference) -> None:
    devices = nx.distributed.devices(client)
    assert len(devices) == 2
    assert repr(devices[0]).startswith("DaskDevice(worker='inproc://")
    mapped = nx.pmap(layer, in_axes=(None, 0), devices=devices)
    assert_identical(mapped(W, XS), reference)
    assert_identical(nx.pmap(layer, in_axes=(None, 0), devices=devices[:1])(W, XS), reference)


def test_out_axes_and_a_mapped_pytree(client) -> None:
    def pair(xy):
        x, y = xy
        return x * y, np.sum(x) + y[0]

    xy = (XS.T.copy(), (2.0 * XS).T.copy())
    got = nx.distributed.map(pair, xy, in_axes=1, out_axes=(1, 0), timeout=TIMEOUT)
    want = nx.jit(nx.vmap(pair, in_axes=1, out_axes=(1, 0), method="loop"))(xy)
    assert_identical(got, want)


def test_an_example_raising_names_it_and_the_users_line(client) -> None:
    xs = np.linspace(-1.0, 2.0, 11)[:, None]
    with pytest.raises(nx.distributed.ExampleError) as caught:
        nx.distributed.map(checked, xs, batch_size=3, timeout=TIMEOUT)
    error = caught.value
    assert error.index == int(np.argmax(xs[:, 0] > 1.5))
    assert error.error_type == "ValueError"
    assert error.remote_message == "x too large"
    assert error.filename == __file__
    assert error.lineno == line_of(checked, "raise ValueError")
    assert "checked" in str(error)


def test_what_numbax_cannot_compile_is_its_compile_error_in_the_users_file(client) -> None:
    with pytest.raises(nx.CompileError, match="pid_scaled") as caught:
        nx.distributed.map(pid_scaled, XS, timeout=TIMEOUT)
    assert caught.value.filename == __file__


class _Bars:
    """A stand-in for tqdm that records the bars a map opens and what they count."""

    def __init__(self) -> None:
        self.opened: list[dict] = []

    def __call__(self, **options):
        self.opened.append({**options, "updates": 0, "closed": False})
        record = self.opened[-1]

        class Bar:
            def update(self, n):
                record["updates"] += n

            def close(self):
                record["closed"] = True

        return Bar()


def test_a_progress_bar_over_the_batches_when_asked_or_when_the_map_is_long(
    client, reference, monkeypatch
) -> None:
    bars = _Bars()
    monkeypatch.setattr(nx.distributed, "_tqdm", lambda: bars)
    for progress in (False, None):  # a short map shows none by default
        nx.distributed.map(layer, W, XS, in_axes=(None, 0), batch_size=2, progress=progress)
    assert bars.opened == []
    got = nx.distributed.map(layer, W, XS, in_axes=(None, 0), batch_size=2, progress=True)
    assert_identical(got, reference)
    [bar] = bars.opened
    assert bar["total"] == 7 and bar["unit"] == "batch" and bar["closed"]
    assert bar["initial"] + bar["updates"] == 6  # the last batch closes it
    monkeypatch.setattr(nx.distributed, "PROGRESS_AFTER", -1.0)  # every map is long
    nx.distributed.map(layer, W, XS, in_axes=(None, 0), batch_size=2)
    assert len(bars.opened) == 2


def test_a_collective_is_refused_naming_it(client) -> None:
    with pytest.raises(NotImplementedError, match=r"nx\.lax\.psum .*nx\.pmap on one machine"):
        nx.distributed.map(centered, XS[:, 0], timeout=TIMEOUT)


def test_a_lambda_is_refused_source_travels(client) -> None:
    with pytest.raises(TypeError, match="source of <lambda>.*never a pickled function"):
        nx.distributed.map(lambda x: x + 1.0, XS, timeout=TIMEOUT)


def test_import_numbax_imports_no_dask_and_a_missing_dask_is_named() -> None:
    code = textwrap.dedent(
        """
        import sys
        import numbax
        assert "distributed" not in sys.modules and "dask" not in sys.modules
        sys.modules["distributed"] = None  # Dask not installed
        try:
            numbax.distributed
        except ImportError as error:
            print(error)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "pip install numbax[distributed]" in out.stdout


def doubled(x):
    return x * 2.0


def test_a_failed_lowering_ahead_of_the_first_batch_is_logged_and_the_batch_runs(
    monkeypatch, caplog
) -> None:
    from numbax.distributed import shipping, worker

    class LoweringFails:
        def __init__(self, mapped):
            self.mapped = mapped

        def lower(self, *args):
            raise ValueError("cannot lower")

        def __call__(self, *args):
            return self.mapped(*args)

    jit = worker.jit
    monkeypatch.setattr(worker, "jit", lambda f, **options: LoweringFails(jit(f, **options)))
    shipped, _ = shipping.ship(doubled, 0, 0)
    xs = np.arange(4.0)
    with caplog.at_level("WARNING", logger="numbax.distributed.worker"):
        out, info = worker.run_batch(
            0,
            (xs,),
            shipped=shipped,
            client_versions=worker.versions(),
            cache_dir=None,
            client_pid=os.getpid(),
        )
    np.testing.assert_array_equal(out, xs * 2.0)
    assert info.first and "lowering doubled ahead of its first batch failed" in caplog.text


def test_a_joining_worker_sets_up_numbas_target_before_its_first_batch(monkeypatch, caplog) -> None:
    """On a thread the version check starts, so the first batch finds it done; a failure
    is logged, and the first batch sets it up itself."""
    import threading

    from numbax.distributed import worker

    target = worker.cpu_target.target_context
    refreshed = threading.Event()
    monkeypatch.setattr(target, "refresh", refreshed.set)
    worker.VersionCheck(worker.versions()).setup(None)
    assert refreshed.wait(30)

    def fails():
        refreshed.set()
        raise RuntimeError("no target")

    refreshed.clear()
    monkeypatch.setattr(target, "refresh", fails)
    with caplog.at_level("WARNING", logger="numbax.distributed.worker"):
        worker.VersionCheck(worker.versions()).setup(None)
        assert refreshed.wait(30)
        for _ in range(300):  # the log line follows the raise on the thread
            if "setting up Numba's CPU target" in caplog.text:
                break
            threading.Event().wait(0.01)
    assert "setting up Numba's CPU target ahead of the first batch failed" in caplog.text

"""``nx.distributed.map`` on two worker processes sharing a private cache directory:
one compile of each generated function across the cluster (the other worker loads it),
none when warm; a worker killed mid-map (identical result); an exception in the user's
code; a worker of other versions refused."""

import os
import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

from distributed import Client, LocalCluster  # noqa: E402

import numbax as nx  # noqa: E402
from numbax.distributed.worker import VersionCheck, versions  # noqa: E402
from tests.helpers.source import line_of  # noqa: E402

TIMEOUT = 180  # seconds a map may take here before the test fails


def spin(p, n):
    """Examples long enough to kill a worker while they run (Lorenz, explicit Euler)."""
    sigma, rho, beta = p[0], p[1], p[2]
    x, y, z = 1.0, 1.0, 1.0
    for _ in range(n):
        x, y, z = (
            x + 0.0001 * sigma * (y - x),
            y + 0.0001 * (x * (rho - z) - y),
            z + 0.0001 * (x * y - beta * z),
        )
    if x != x:
        raise FloatingPointError("the state is nan")
    return x * x


PS = np.random.default_rng(5).normal(size=(64, 3)) + np.array([10.0, 28.0, 8.0 / 3.0])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cache = tmp_path_factory.mktemp("numbax-dask-cache")
    with (
        LocalCluster(
            processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client, str(cache)


@pytest.fixture(scope="module")
def reference():
    return nx.jit(nx.vmap(spin, in_axes=(0, None), method="loop"))(PS, 1000)


def test_one_compile_across_the_cluster_none_when_warm(cluster, reference) -> None:
    client, cache = cluster
    got = nx.distributed.map(spin, PS, 1000, in_axes=(0, None), cache_dir=cache, timeout=TIMEOUT)
    np.testing.assert_array_equal(got, reference, strict=True)
    cold = nx.distributed.last_report()
    assert cold.compiles > 0
    assert sorted(cold.compiles_per_worker.values())[-2:] in ([0, cold.compiles], [cold.compiles])
    client.restart()  # fresh worker processes: everything is loaded from the cache
    again = nx.distributed.map(spin, PS, 1000, in_axes=(0, None), cache_dir=cache, timeout=TIMEOUT)
    np.testing.assert_array_equal(again, reference, strict=True)
    assert nx.distributed.last_report().compiles == 0


def test_an_example_raising_on_a_worker(cluster) -> None:
    client, cache = cluster
    ps = PS.copy()
    ps[37, 1] = np.nan
    with pytest.raises(nx.distributed.ExampleError) as caught:
        nx.distributed.map(spin, ps, 1000, in_axes=(0, None), cache_dir=cache, timeout=TIMEOUT)
    assert caught.value.index == 37
    assert caught.value.error_type == "FloatingPointError"
    assert (caught.value.filename, caught.value.lineno) == (
        __file__,
        line_of(spin, "raise FloatingPointError"),
    )


def test_a_worker_of_other_versions_is_refused(cluster) -> None:
    client, _ = cluster
    other = {**versions(), "numba": "0.0.1"}
    try:
        with pytest.raises(nx.distributed.VersionMismatch, match=r"numba 0\.0\.1 on the client"):
            client.register_plugin(VersionCheck(other), name=VersionCheck.name)
    finally:
        client.register_plugin(VersionCheck(versions()), name=VersionCheck.name)


def test_a_worker_killed_mid_map_gives_the_identical_result(cluster) -> None:
    client, cache = cluster
    steps = 8_000_000  # about 30 ms an example: the map runs for seconds
    want = nx.jit(nx.vmap(spin, in_axes=(0, None), method="loop"))(PS, steps)
    pids = client.run(os.getpid)
    killed = []

    def kill_one_when_busy() -> None:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if len(busy) == 2:
                time.sleep(0.3)
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(time.monotonic())
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one_when_busy)
    killer.start()
    got = nx.distributed.map(
        spin, PS, steps, in_axes=(0, None), cache_dir=cache, timeout=TIMEOUT, batch_size=4
    )
    finished = time.monotonic()
    killer.join()
    assert killed and killed[0] < finished  # the worker died while the map ran
    np.testing.assert_array_equal(got, want, strict=True)

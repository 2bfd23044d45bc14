"""Writes 02_loops_and_control_flow.ipynb (kept as code so its text is reviewable in diffs)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Loops and control flow\n\n"
        "Scientific code is loops: time steppers, iterations to a tolerance, searches that "
        "stop early. numbax differentiates them as written — `for` and `while` loops, "
        "`if`/`break`, in-place updates `a[i] = ...` and calls to your own helper "
        "functions — by generating a reverse-mode program that saves what each iteration "
        "overwrites and then runs the loop backwards.\n\n"
        "The example: fitting the parameters of a predator–prey model, integrated by an "
        "adaptive-step solver whose number of steps depends on the parameters."
    ),
    new_code_cell(
        "import time\n\nimport matplotlib.pyplot as plt\nimport numpy as np\n\nimport numbax as nx"
    ),
    new_markdown_cell(
        "## An adaptive ODE solver in plain NumPy\n\n"
        "Lotka–Volterra: prey `u` grow at rate α and are eaten at rate β·u·v; predators "
        "`v` die at rate γ and reproduce at rate δ·u·v. θ = (α, β, γ, δ).\n\n"
        "`heun_step` takes one Heun (2nd-order) step and returns the Euler (1st-order) "
        "step it started from; their difference estimates the local error. `solve` runs a "
        "`while t < T` loop: a step is accepted when the error is below `tol`, and the "
        "next step size is chosen from the error either way. Between two accepted points "
        "the solution is interpolated at the requested output times `t_obs` and written "
        "into `out` in place — an inner `while` loop that stops with `break` once the "
        "next output time lies beyond the step. (Interpolating, rather than shortening "
        "steps to land on each output time, keeps the step sequence independent of the "
        "output grid: no tiny steps, and a derivative that tracks the ODE's.)"
    ),
    new_code_cell(
        "def lotka_volterra(u, v, theta):\n"
        "    alpha, beta, gamma, delta = theta[0], theta[1], theta[2], theta[3]\n"
        "    return alpha * u - beta * u * v, delta * u * v - gamma * v\n\n\n"
        "def heun_step(u, v, h, theta):\n"
        "    du1, dv1 = lotka_volterra(u, v, theta)\n"
        "    u_euler, v_euler = u + h * du1, v + h * dv1\n"
        "    du2, dv2 = lotka_volterra(u_euler, v_euler, theta)\n"
        "    return u + 0.5 * h * (du1 + du2), v + 0.5 * h * (dv1 + dv2), u_euler, v_euler\n\n\n"
        "def solve(theta, t_obs, tol=1e-6):\n"
        '    """(u, v) at the times t_obs (increasing, the last one is the end time T)."""\n'
        "    out = np.zeros((t_obs.shape[0], 2))\n"
        "    t, u, v, h = 0.0, 1.0, 1.0, 0.01\n"
        "    k = 0  # next output time to fill\n"
        "    T = t_obs[-1]\n"
        "    while t < T:\n"
        "        h = np.minimum(h, T - t)\n"
        "        u_new, v_new, u_euler, v_euler = heun_step(u, v, h, theta)\n"
        "        err = np.maximum(abs(u_new - u_euler), abs(v_new - v_euler))\n"
        "        if err <= tol:  # accept the step\n"
        "            while k < t_obs.shape[0]:\n"
        "                if t_obs[k] > t + h:\n"
        "                    break\n"
        "                w = (t_obs[k] - t) / h\n"
        "                out[k, 0] = (1.0 - w) * u + w * u_new\n"
        "                out[k, 1] = (1.0 - w) * v + w * v_new\n"
        "                k += 1\n"
        "            t, u, v = t + h, u_new, v_new\n"
        "        h = h * np.clip(0.9 * np.sqrt(tol / (err + 1e-300)), 0.2, 2.0)\n"
        "    return out"
    ),
    new_markdown_cell(
        "Synthetic data: the solution for the true θ at 20 times, plus noise. The plot shows "
        "the trajectory (plain Python running `solve`) and the observations."
    ),
    new_code_cell(
        "theta_true = np.array([1.5, 1.0, 3.0, 1.0])\n"
        "t_obs = np.linspace(0.5, 10.0, 20)\n"
        "rng = np.random.default_rng(0)\n"
        "data = solve(theta_true, t_obs) + 0.05 * rng.standard_normal((t_obs.shape[0], 2))\n\n"
        "t_plot = np.linspace(0.05, 10.0, 200)\n"
        "path = solve(theta_true, t_plot)\n"
        "fig, ax = plt.subplots(figsize=(8, 3))\n"
        "ax.plot(t_plot, path[:, 0], label='prey u')\n"
        "ax.plot(t_plot, path[:, 1], label='predators v')\n"
        "ax.plot(t_obs, data[:, 0], 'o', color='C0', ms=4)\n"
        "ax.plot(t_obs, data[:, 1], 'o', color='C1', ms=4)\n"
        "ax.set_xlabel('t')\n"
        "ax.legend()\n"
        "plt.show()"
    ),
    new_markdown_cell(
        "## The gradient of a loss through the solver\n\n"
        "A least-squares misfit against the data. `nx.grad` differentiates it — through the "
        "`while` loop, the accept/reject branch, the step-size control, the inner loop with "
        "its `break`, the in-place stores into `out` and both helper functions. The same "
        "gradient runs interpreted (the generated Python source, run by Python) and "
        "compiled by `nx.jit`."
    ),
    new_code_cell(
        "def loss(theta, t_obs, data):\n"
        "    return np.sum((solve(theta, t_obs) - data) ** 2)\n\n\n"
        "theta = np.array([1.4, 1.1, 2.9, 1.05])  # a first guess\n"
        "grad_loss = nx.jit(nx.grad(loss))\n"
        "start = time.perf_counter()\n"
        "g = grad_loss(theta, t_obs, data)\n"
        "print(f'first call (generate + compile) {time.perf_counter() - start:.1f} s')\n"
        "print('jit(grad):  ', g)\n"
        "g_interpreted = nx.grad(loss)(theta, t_obs, data)\n"
        "print('grad:       ', g_interpreted)\n"
        "np.testing.assert_allclose(g_interpreted, g, rtol=1e-10)"
    ),
    new_markdown_cell(
        "Checked against central finite differences of the compiled loss. They agree to "
        "about seven digits: the loss is smooth in θ as long as the sequence of accepted "
        "and rejected steps does not change, which holds over a small enough ε."
    ),
    new_code_cell(
        "loss_jit = nx.jit(loss)\n\n\n"
        "def central_differences(f, x, eps=1e-6):\n"
        "    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps)\n"
        "                     for e in np.eye(x.shape[0])])\n\n\n"
        "fd = central_differences(lambda th: loss_jit(th, t_obs, data), theta)\n"
        "print('finite differences:', fd)\n"
        "np.testing.assert_allclose(g, fd, rtol=1e-5)\n"
        "%timeit -n 10 -r 3 grad_loss(theta, t_obs, data)"
    ),
    new_markdown_cell(
        "## Reading the reverse-mode source\n\n"
        "`nx.show(nx.grad(loss))` shows a call of `solve`'s generated derivative "
        "(`_vjp_solve`): helpers get derivatives of their own. Two small loops show what "
        "such a derivative looks like. A `while` loop to a tolerance — Newton's square "
        "root: the forward loop counts its iterations (`_trips`) and pushes each value it "
        "overwrites on a tape; the backward loop runs that many times, popping the tape "
        "and accumulating the cotangent `_ct_a`."
    ),
    new_code_cell(
        "def newton_sqrt(a):\n"
        "    x = a\n"
        "    while abs(x * x - a) > 1e-12 * a:\n"
        "        x = 0.5 * (x + a / x)\n"
        "    return x\n\n\n"
        "print(nx.grad(newton_sqrt)(2.0), 0.5 / np.sqrt(2.0))\n"
        "np.testing.assert_allclose(nx.grad(newton_sqrt)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-12)\n"
        "nx.show(nx.grad(newton_sqrt))"
    ),
    new_markdown_cell(
        "A fixed-step `for` loop calling the `heun_step` helper: 2,000 steps to t = 10, the "
        "gradient of the final prey population. The backward `range` runs from the last "
        "step to the first; each step calls `heun_step`'s generated derivative "
        "`_vjp_heun_step`."
    ),
    new_code_cell(
        "def final_prey(theta):\n"
        "    n_steps = 2000\n"
        "    h = 10.0 / n_steps\n"
        "    u, v = 1.0, 1.0\n"
        "    for _ in range(n_steps):\n"
        "        u, v, u_euler, v_euler = heun_step(u, v, h, theta)\n"
        "    return u\n\n\n"
        "nx.show(nx.grad(final_prey))"
    ),
    new_markdown_cell(
        "## Sensitivities along the trajectory\n\n"
        "`nx.jacfwd` (forward mode: one pass per parameter, no tape) of the whole sampled "
        "trajectory with respect to θ: `d(u, v)(t) / dθ`, shape `(200, 2, 4)`. The "
        "sensitivities grow with t — a perturbed oscillator drifts out of phase. (The "
        "finite differences use a smaller ε here: a sample is interpolated within a step, "
        "and where a step boundary moves across a sample within ±ε the differences see a "
        "kink.)"
    ),
    new_code_cell(
        "sens = nx.jit(nx.jacfwd(solve))(theta_true, t_plot)\n"
        "print(sens.shape)\n"
        "solve_jit = nx.jit(solve)\n"
        "fd = central_differences(lambda th: solve_jit(th, t_plot), theta_true, eps=1e-7)\n"
        "np.testing.assert_allclose(sens, np.moveaxis(fd, 0, -1), rtol=1e-5, atol=1e-4)\n\n"
        "fig, axes = plt.subplots(1, 2, figsize=(10, 3), sharey=True)\n"
        "for i, name in enumerate(['α', 'β', 'γ', 'δ']):\n"
        "    axes[0].plot(t_plot, sens[:, 0, i], label=f'∂u/∂{name}')\n"
        "    axes[1].plot(t_plot, sens[:, 1, i], label=f'∂v/∂{name}')\n"
        "for ax in axes:\n"
        "    ax.set_xlabel('t')\n"
        "    ax.legend(fontsize=8)\n"
        "plt.show()"
    ),
    new_markdown_cell(
        "## Other constructs, briefly\n\n"
        "`break` out of a `for` loop: a series summed until its terms stop mattering (the "
        "number of terms depends on x). The derivative of exp is exp."
    ),
    new_code_cell(
        "def exp_series(x):\n"
        "    term, total = 1.0, 1.0\n"
        "    for n in range(1, 100):\n"
        "        term = term * x / n\n"
        "        total = total + term\n"
        "        if abs(term) < 1e-16 * abs(total):\n"
        "            break\n"
        "    return total\n\n\n"
        "print(nx.grad(exp_series)(1.3), np.exp(1.3))\n"
        "np.testing.assert_allclose(nx.jit(nx.grad(exp_series))(1.3), np.exp(1.3), rtol=1e-14)"
    ),
    new_markdown_cell(
        "In-place updates of an array inside a loop: a running product `p[i + 1] = p[i] * "
        "x[i]`. Reverse mode saves each overwritten element and restores it on the way "
        "back; the gradient of the product is the product divided by each factor."
    ),
    new_code_cell(
        "def running_product(x):\n"
        "    p = np.ones(x.shape[0] + 1)\n"
        "    for i in range(x.shape[0]):\n"
        "        p[i + 1] = p[i] * x[i]\n"
        "    return p[-1]\n\n\n"
        "x = np.array([0.5, 2.0, 3.0, -1.5])\n"
        "print(nx.grad(running_product)(x))\n"
        "np.testing.assert_allclose(nx.grad(running_product)(x), np.prod(x) / x)"
    ),
    new_markdown_cell(
        "## Side by side with JAX\n\n"
        "JAX traces a Python loop by unrolling it; to keep a loop compact it must be "
        "rewritten with `lax.fori_loop`, and JAX cannot reverse-differentiate "
        "`lax.while_loop` at all, so the adaptive solver above has no JAX gradient. A "
        "fixed-step version it can express: `final_prey` above. numbax differentiates the "
        "plain loop; JAX's twin calls the same `heun_step` helper inside `fori_loop`. "
        "(Skipped when JAX is not installed.)"
    ),
    new_code_cell(
        "grad_final_prey = nx.jit(nx.grad(final_prey))\n"
        "print('numbax:', grad_final_prey(theta_true))\n"
        "%timeit -n 20 -r 3 grad_final_prey(theta_true)"
    ),
    new_code_cell(
        "try:\n"
        "    import jax\n"
        "except ImportError:\n"
        "    jax = None\n"
        "    print('JAX is not installed: no comparison.')\n\n"
        "if jax is not None:\n"
        "    jax.config.update('jax_enable_x64', True)  # numbax computes in float64\n\n"
        "    def final_prey_fori(theta):\n"
        "        n_steps = 2000\n"
        "        h = 10.0 / n_steps\n\n"
        "        def body(_, state):\n"
        "            u, v, u_euler, v_euler = heun_step(state[0], state[1], h, theta)\n"
        "            return u, v\n\n"
        "        u, v = jax.lax.fori_loop(0, n_steps, body, (1.0, 1.0))\n"
        "        return u\n\n"
        "    grad_jax = jax.jit(jax.grad(final_prey_fori))\n"
        "    theta_jax = jax.numpy.asarray(theta_true)\n"
        "    print('jax:   ', grad_jax(theta_jax))\n"
        "    np.testing.assert_allclose(grad_jax(theta_jax), grad_final_prey(theta_true),\n"
        "                               rtol=1e-10)\n"
        "    %timeit -n 20 -r 3 grad_jax(theta_jax).block_until_ready()"
    ),
    new_markdown_cell(
        "The adaptive solver is a `while` loop whose trip count depends on θ. In JAX that "
        "is `lax.while_loop`, which forward mode handles but reverse mode refuses:"
    ),
    new_code_cell(
        "if jax is not None:\n\n"
        "    def prey_at_T(theta):\n"
        "        def not_done(state):\n"
        "            return state[0] < 10.0\n\n"
        "        def step(state):\n"
        "            t, u, v, h = state\n"
        "            u_new, v_new, u_euler, v_euler = heun_step(u, v, h, theta)\n"
        "            err = jax.numpy.maximum(abs(u_new - u_euler), abs(v_new - v_euler))\n"
        "            ok = err <= 1e-6\n"
        "            h_next = h * jax.numpy.clip(0.9 * jax.numpy.sqrt(1e-6 / (err + 1e-300)),\n"
        "                                        0.2, 2.0)\n"
        "            return (jax.numpy.where(ok, t + h, t), jax.numpy.where(ok, u_new, u),\n"
        "                    jax.numpy.where(ok, v_new, v), h_next)\n\n"
        "        return jax.lax.while_loop(not_done, step, (0.0, 1.0, 1.0, 0.01))[1]\n\n"
        "    try:\n"
        "        jax.grad(prey_at_T)(theta_jax)\n"
        "    except ValueError as err:\n"
        "        print(f'{type(err).__name__}: {err}'.splitlines()[0])"
    ),
    new_markdown_cell(
        "numbax reverses the `while` loop by counting its iterations on the way forward "
        "and running that many backwards: the gradient of the adaptive solver above."
    ),
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("02_loops_and_control_flow.ipynb"))

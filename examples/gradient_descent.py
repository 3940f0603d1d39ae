"""One spec, many states: three learning rates trained over one recorded network.

The network ``y = w * x + b`` is recorded once. Three parameter tables train on three
threads over the same network; each thread reads the spec and writes only its own table.
The script checks that the spec's dump is unchanged and that each trajectory equals the
same trajectory run alone.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from topos import Network, Parameters, Symbol, Tape, Tensor, Value, f64

SAMPLES = [(x / 10.0, 3.0 * (x / 10.0) - 1.0) for x in range(-10, 11)]


def record() -> tuple[Network, dict[str, Symbol]]:
    def build(tape: Tape) -> dict[str, Value]:
        w = tape.parameter(0.0)
        b = tape.parameter(0.0)
        x = tape.input(0.0)
        y = tape.input(0.0)
        error = w * x + b - y
        return {"w": w, "b": b, "x": x, "y": y, "loss": error * error}

    return Tape.record(build, element=f64)


def train(network: Network, s: dict[str, Symbol], rate: float, steps: int = 500) -> Parameters:
    parameters = network.parameters()
    for step in range(steps):
        sample_x, sample_y = SAMPLES[step % len(SAMPLES)]
        run = network.forward(parameters, {s["x"]: sample_x, s["y"]: sample_y})
        gradients = run.backward(s["loss"]).parameters(parameters)
        parameters = parameters.step(gradients, lambda p, g: p - g * Tensor(rate))
    return parameters


def main(steps: int = 500) -> None:
    network, s = record()
    before = network.describe()
    rates = [0.005, 0.02, 0.05]
    with ThreadPoolExecutor(max_workers=3) as pool:
        tables = list(pool.map(lambda rate: train(network, s, rate, steps), rates))
    assert network.describe() == before, "training changed the spec"
    for rate, table in zip(rates, tables, strict=True):
        alone = train(network, s, rate, steps)
        same = all(
            (a.bits() == b.bits()).all()
            for a, b in zip(table.payloads(), alone.payloads(), strict=True)
        )
        assert same, f"the threaded trajectory for rate {rate} differs from the lone one"
        print(f"rate {rate:<6} w = {table.of(s['w']).scalar():.6f}  b = {table.of(s['b']).scalar():.6f}")
    print("spec unchanged; each state independent and reproducible")


if __name__ == "__main__":
    # ``--smoke``: fewer steps (the tests run this); the property checked is the same.
    main(100 if "--smoke" in sys.argv[1:] else 500)

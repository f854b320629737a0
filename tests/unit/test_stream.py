"""The random stream of docs/method.md §4.4: Philox4x32-10 against its published answers; the numpy reference
(``onenn.maths.stream``), its numba port (``onenn.training.cpu_stream``) and Triton's own ``tl.randint4x`` (which the
GPU engine's port draws from; in Triton's interpreter without a GPU) held to it; the normals' law; and no two random
inputs of the default configuration sharing a stream. The GPU engine's own draws: tests/unit/test_gpu.py."""

import math
import os

import numpy as np
import pytest
import torch
import yaml
from numba import njit

from onenn.maths import stream
from onenn.plan import experiments
from onenn.theory.scaling import points
from onenn.training import cpu_stream
from tests.configs import ROOT

try:
    import triton
    import triton.language as tl
except ImportError:
    if os.environ.get("CI"):  # .ci/run installs triton: there these tests must run
        raise
    triton = None

needs_triton = pytest.mark.skipif(triton is None, reason="triton is not installed (workflow/envs/triton.txt)")
#: where a Triton kernel runs: CPU tensors in the interpreter (tests/conftest.py switches it on without a GPU)
TRITON_DEVICE = torch.device("cpu" if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0") else "cuda")

#: Random123's known answers for Philox4x32-10 (its file kat_vectors): counter c0..c3, key k0 k1 -> the four words
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]
#: the float32 polynomials' error bounds (onenn.training.cpu_stream's docstring): ulps, or an absolute floor near zero
ULP_LOG, ULP_SINCOS, ULP_NORMAL, ABS_FLOOR = 2.0, 2.0, 4.0, 2.0**-24
KEY = stream.stream_key(3, "minibatches")


@njit
def philox_counters(c, k0, k1, out):
    """The port's Philox4x32-10 of each counter ``c[:, i]`` (4, n) under the key ``(k0, k1)``."""
    for i in range(c.shape[1]):
        w = cpu_stream._philox(c[0, i], c[1, i], c[2, i], c[3, i], np.uint32(k0), np.uint32(k1))
        out[0, i], out[1, i], out[2, i], out[3, i] = w


@njit
def port_words(key, offsets, out, normals):
    """The port's words (``normals``: its normals) at the 64-bit counters ``offsets``, as ``stream.randint4x``."""
    k0, k1 = np.uint32(np.uint64(key) & cpu_stream.LOW), np.uint32(np.uint64(key) >> np.uint64(32))
    for i in range(offsets.shape[0]):
        c0, c1 = np.uint32(offsets[i] & cpu_stream.LOW), np.uint32(offsets[i] >> np.uint64(32))
        w0, w1, w2, w3 = cpu_stream._philox(c0, c1, np.uint32(0), np.uint32(0), k0, k1)
        if normals:
            out[0, i], out[1, i] = cpu_stream._box_muller(w0, w1)
            out[2, i], out[3, i] = cpu_stream._box_muller(w2, w3)
        else:
            out[0, i], out[1, i], out[2, i], out[3, i] = w0, w1, w2, w3


@njit
def log_sincos(x, log_out, sin_out, cos_out):
    for i in range(x.shape[0]):
        log_out[i] = cpu_stream.log_f32(max(cpu_stream.U_MIN, x[i]))
        sin_out[i], cos_out[i] = cpu_stream.sincos_f32(x[i])


def draw(z: np.ndarray, c: np.ndarray, key: int, step: int, K: int) -> None:
    """One step of the port's draw into ``z`` (d, N+1, B) and ``c`` (N, B)."""
    cpu_stream.draw_block(z[None], c[None], key, step, 1, K, z.shape[0])


def ulps(x: np.ndarray, exact: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """|x − exact| in float32 ulps of ``exact`` (no smaller than ``floor``)."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(x.astype(np.float64) - exact) / np.maximum(spacing, floor)


def random_offsets(n: int, seed: int = 0) -> np.ndarray:
    """``n`` random counters below 2⁶³, and the edges: 0, 2³² − 1, 2³², 2⁶³ − 1."""
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, 2**63, size=n, dtype=np.int64).astype(np.uint64)
    return np.concatenate([drawn, np.array([0, 2**32 - 1, 2**32, 2**63 - 1], dtype=np.uint64)])


# --- Philox4x32-10 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS)
def test_philox_gives_random123s_known_answers(counter, key, expected):
    assert [int(w) for w in stream.philox4x32(*counter, *key)] == list(expected)
    out = np.empty((4, 1), dtype=np.uint32)
    philox_counters(np.array(counter, dtype=np.uint32)[:, None], *key, out)
    assert out[:, 0].tolist() == list(expected)


def test_the_key_and_counter_are_split_as_triton_splits_them():
    # tl.randint4x(seed, offset) runs Philox on the counter (offset low word, high word, 0, 0) under the key
    # (seed low word, seed high word)
    key, offset = 0x299F31D0A4093822, 0x85A308D3243F6A88
    words = stream.randint4x(key, np.array([offset], dtype=np.uint64))[:, 0]
    assert words.tolist() == [int(w) for w in stream.philox4x32(0x243F6A88, 0x85A308D3, 0, 0, 0xA4093822, 0x299F31D0)]


def test_numba_gives_the_references_words():
    offsets = random_offsets(10_000)
    for key in (0, KEY, 2**63 - 1):
        out = np.empty((4, len(offsets)), dtype=np.uint32)
        port_words(key, offsets, out, False)
        np.testing.assert_array_equal(out, stream.randint4x(key, offsets))


@needs_triton
def test_triton_gives_the_references_words():
    @triton.jit
    def words_kernel(out_ptr, key, offsets_ptr, n: tl.constexpr):
        i = tl.arange(0, n)
        w0, w1, w2, w3 = tl.randint4x(key, tl.load(offsets_ptr + i))
        for r, w in enumerate((w0, w1, w2, w3)):
            tl.store(out_ptr + r * n + i, w.to(tl.int64))

    offsets = random_offsets(1020)  # 1024 counters
    for key in (0, KEY, 2**63 - 1):
        out = torch.empty(4, len(offsets), dtype=torch.int64, device=TRITON_DEVICE)
        words_kernel[(1,)](out, key, torch.from_numpy(offsets.view(np.int64)).to(TRITON_DEVICE), len(offsets))
        np.testing.assert_array_equal(out.cpu().numpy(), stream.randint4x(key, offsets).astype(np.int64))


# --- words to numbers ----------------------------------------------------------------------------------------------


def test_uniforms_follow_the_definition():
    # x = the word as an int32, −x − 1 where negative; then float32(x) · 4.6566127342e-10 in float32
    words = np.array([0, 1, 2**24 + 1, 2**31 - 1, 2**31, 2**32 - 1], dtype=np.uint32)
    x = [0, 1, 2**24 + 1, 2**31 - 1, 2**31 - 1, 0]
    expected = [np.float32(np.float32(v) * np.float32(4.6566127342e-10)) for v in x]
    np.testing.assert_array_equal(stream.uniform(words), np.array(expected, dtype=np.float32))
    largest = stream.uniform(np.arange(2**31 - 2**20, 2**31, dtype=np.uint32))
    assert largest.max() < 1.0  # every word maps below 1


def test_classes_are_the_multiply_shift_of_the_word():
    words = np.array([0, 2**32 // 3, 2**32 // 3 + 1, 2 * 2**32 // 3 + 1, 2**32 - 1], dtype=np.uint32)
    assert stream.classes(words, 3).tolist() == [0, 0, 1, 2, 2]  # ⌊3w / 2³²⌋


def test_box_muller_is_the_polar_form():
    u1 = np.array([1.0, 0.5, 1e-9, 0.25], dtype=np.float32)
    u2 = np.array([0.0, 0.25, 0.5, 0.125], dtype=np.float32)
    n1, n2 = stream.box_muller(u1, u2)
    r = np.sqrt(-2 * np.log(np.maximum(u1.astype(float), 1e-7)))
    theta = (np.float32(2 * math.pi) * u2).astype(float)  # θ rounded to float32, as the definition has it
    np.testing.assert_allclose(n1, r * np.cos(theta), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(n2, r * np.sin(theta), rtol=1e-6, atol=1e-7)


def test_the_float32_polynomials_are_within_their_bounds():
    rng = np.random.default_rng(5)
    words = np.concatenate(
        [rng.integers(0, 2**32, size=2**21, dtype=np.uint64), np.arange(2**31 - 2**16, 2**31 + 2**16), [0, 1]]
    ).astype(np.uint32)
    u = np.maximum(stream.U_MIN, stream.uniform(words))  # every u1 the stream can give (a dense sample)
    log, _, _ = polynomials(u)
    assert ulps(log, np.log(u.astype(np.float64))).max() <= ULP_LOG
    theta = stream.TWO_PI * stream.uniform(words)  # every θ the stream can give
    _, sin, cos = polynomials(theta)
    exact = theta.astype(np.float64)
    assert ulps(sin, np.sin(exact), ABS_FLOOR).max() <= ULP_SINCOS
    assert ulps(cos, np.cos(exact), ABS_FLOOR).max() <= ULP_SINCOS


def every_uniform():
    """Every distinct uniform the stream gives, in chunks: ``float32(x) · s`` for the 2²⁴ + 7·2²³ distinct float32
    values of the integers ``0 ≤ x < 2³¹`` (every integer up to 2²⁴, then 2²³ a binade)."""
    yield np.arange(0, 2**24 + 1, dtype=np.float64).astype(np.float32) * stream.UNIFORM_SCALE
    for k in range(24, 31):
        for lo in range(0, 2**23, 2**22):
            x = 2.0**k + 2.0 ** (k - 23) * np.arange(lo, lo + 2**22, dtype=np.float64)
            yield x.astype(np.float32) * stream.UNIFORM_SCALE


@pytest.mark.slow
def test_the_float32_polynomials_are_within_their_bounds_on_every_input():
    count = 0
    for u in every_uniform():
        count += len(u)
        u1 = np.maximum(stream.U_MIN, u)
        log, _, _ = polynomials(u1)
        assert ulps(log, np.log(u1.astype(np.float64))).max() <= ULP_LOG
        theta = stream.TWO_PI * u
        _, sin, cos = polynomials(theta)
        exact = theta.astype(np.float64)
        assert ulps(sin, np.sin(exact), ABS_FLOOR).max() <= ULP_SINCOS
        assert ulps(cos, np.cos(exact), ABS_FLOOR).max() <= ULP_SINCOS
    assert count == 2**24 + 1 + 7 * 2**23


def polynomials(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    out = tuple(np.empty_like(x) for _ in range(3))
    log_sincos(x, *out)
    return out


def test_the_draw_kernels_ask_for_wide_vectors():
    # _wide_vectors marks the LLVM function that calls it; a function without the call has no such attribute
    from numba import njit

    @njit
    def marked(x):
        cpu_stream._wide_vectors()
        return x + 1

    @njit
    def plain(x):
        return x + 1

    attribute = '"prefer-vector-width"="512"'
    assert marked(1) == 2 and plain(1) == 2
    assert attribute in marked.inspect_llvm(marked.signatures[0])
    assert attribute not in plain.inspect_llvm(plain.signatures[0])


def test_the_log_is_within_its_bound_where_it_splits_x():
    # log_f32 splits x = 2^e·f, f in [√½, √2), on the bits: around every power of two and every 2^e·√½ (where e
    # changes) ln x is within the bound of the exact value (float64); a split at 2^e·½ fails here
    e = np.arange(-24, 3, dtype=np.float64)
    centres = np.concatenate([2.0**e, 2.0**e * math.sqrt(0.5)]).astype(np.float32)
    x = np.concatenate([np.nextafter(centres, np.float32(k * np.inf)) for k in (-1, 1)] + [centres])
    x = np.concatenate([x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf))])
    log, _, _ = polynomials(x[x >= stream.U_MIN])
    exact = np.log(x[x >= stream.U_MIN].astype(np.float64))
    assert ulps(log, exact).max() <= ULP_LOG


def test_numbas_normals_are_within_a_few_ulps_of_the_references():
    offsets = random_offsets(2**18, seed=1)
    out = np.empty((4, len(offsets)), dtype=np.float32)
    port_words(KEY, offsets, out, True)
    assert ulps(out, stream.randn4x(KEY, offsets).astype(np.float64), ABS_FLOOR).max() <= ULP_NORMAL


# --- the minibatch: the same draws from the three implementations ----------------------------------------------------


@pytest.mark.parametrize("d,N,K,B", [(8, 16, 3, 128), (5, 7, 10, 9), (3, 1, 2, 4)])
def test_numba_draws_the_references_minibatch(d, N, K, B):
    z, c = np.empty((d, N + 1, B), dtype=np.float32), np.empty((N, B), dtype=np.int64)
    for step in (0, 1, 99_999):
        draw(z, c, KEY, step, K)
        z_ref, c_ref = stream.minibatch(KEY, step, d, N, K, B)
        np.testing.assert_array_equal(c, c_ref)
        assert ulps(z, z_ref.astype(np.float64), ABS_FLOOR).max() <= ULP_NORMAL


def test_a_draw_does_not_depend_on_the_minibatch_around_it():
    # prompt b, token j, coordinate k of a step is the same number in a minibatch of any size or context length
    small_z, small_c = stream.minibatch(KEY, 7, 8, 4, 3, 5)
    big_z, big_c = stream.minibatch(KEY, 7, 8, 8, 3, 20)
    np.testing.assert_array_equal(small_z[:, :4], big_z[:, :4, :5])
    np.testing.assert_array_equal(small_c, big_c[:4, :5])


# --- the law of the normals, and independence ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def normals() -> np.ndarray:
    """2²² normals from the numba draw kernel: steps 0..63 of a minibatch of 1024 prompts, 8 coordinates, 8 tokens
    (steps, d, tokens, prompts)."""
    z = np.empty((64, 8, 8, 1024), dtype=np.float32)
    c = np.empty((7, 1024), dtype=np.int64)
    for step in range(64):
        draw(z[step], c, KEY, step, 3)
    return z.astype(np.float64)


def test_the_moments_and_the_tails_are_the_normal_laws(normals):
    z = normals.ravel()
    n = z.size
    assert abs(z.mean()) < 4 / math.sqrt(n)
    assert abs(z.var() - 1) < 4 * math.sqrt(2 / n)
    assert abs((z**3).mean()) < 4 * math.sqrt(15 / n)
    assert abs((z**4).mean() - 3) < 4 * math.sqrt(96 / n)
    for a in (2.0, 3.0, 4.0):
        p = math.erfc(a / math.sqrt(2))  # P(|Z| > a)
        count = int((np.abs(z) > a).sum())
        assert abs(count - n * p) < 4 * math.sqrt(n * p), (a, count, n * p)


def test_neighbouring_draws_are_uncorrelated(normals):
    # across steps, prompts, tokens and the coordinates of one call (a Box–Muller pair and the next pair)
    pairs = {
        "step": (normals[1:], normals[:-1]),
        "prompt": (normals[..., 1:], normals[..., :-1]),
        "token": (normals[:, :, 1:], normals[:, :, :-1]),
        "coordinate 0, 1": (normals[:, 0], normals[:, 1]),
        "coordinate 1, 2": (normals[:, 1], normals[:, 2]),
        "coordinate 3, 4": (normals[:, 3], normals[:, 4]),
    }
    for name, (a, b) in pairs.items():
        r = np.corrcoef(a.ravel(), b.ravel())[0, 1]
        assert abs(r) < 4 / math.sqrt(a.size), (name, r)


def test_the_classes_are_uniform():
    c = np.concatenate([stream.minibatch(KEY, step, 1, 16, 5, 1024)[1].ravel() for step in range(8)])
    counts = np.bincount(c, minlength=5)
    expected = len(c) / 5
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 23.5  # the 0.9999 quantile of χ² with 4 degrees of freedom


# --- keys and counters ----------------------------------------------------------------------------------------------


def test_the_key_holds_seed_purpose_and_instance_in_their_own_bits():
    key = stream.stream_key(0xDEADBEEF, "audit", 0xABCDEF)
    assert stream.key_words(key) == (0xDEADBEEF, (stream.PURPOSES["audit"] << 24) | 0xABCDEF)
    assert max(stream.stream_key(2**32 - 1, p, 2**24 - 1) for p in stream.PURPOSES) < 2**63
    assert len(set(stream.PURPOSES.values())) == len(stream.PURPOSES)
    assert all(0 < code < 2**stream.PURPOSE_BITS for code in stream.PURPOSES.values())


@pytest.mark.parametrize(
    "seed,purpose,instance,match",
    [
        (0, "weights", 0, "purpose must be one of initial_weights, minibatches"),
        (2**32, "minibatches", 0, "seed must lie in 0 .. 2"),
        (0, "audit", -1, "instance must lie in 0 .. 2"),
    ],
)
def test_a_bad_key_is_refused_by_name(seed, purpose, instance, match):
    with pytest.raises(ValueError, match=match):
        stream.stream_key(seed, purpose, instance)


def test_the_counters_fields_do_not_overlap():
    assert sum(bits for _, bits in stream.FIELDS) == 63
    shift = 0
    for name, bits in stream.FIELDS:
        assert stream.SHIFTS[name] == shift
        shift += bits
    top = stream.counter(*(stream.BOUNDS[f] - 1 for f in ("step", "prompt", "kind", "token", "group")))
    assert int(top) == 2**63 - 1
    with pytest.raises(ValueError, match="prompt must lie in 0 .. 1048575"):
        stream.counter(0, 2**20, 0, 0, 0)


def default_streams() -> dict[tuple, dict]:
    """Every random input of the default configuration, as (purpose, seed, instance) -> what it must hold: the
    bounds its draws reach (step, prompt, token, group)."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    test_seed = int(config["test_sets"]["seed"])
    out: dict[tuple, dict] = {}

    def need(purpose: str, seed: int, instance: int, **reach) -> None:
        bounds = out.setdefault((purpose, seed, instance), {})
        for field, value in reach.items():
            bounds[field] = max(bounds.get(field, 0), value)

    for name, kind in experiments.kinds(config).items():
        for variant in experiments.variants(config, name):
            s = experiments.settings(config, name, variant)
            if kind == "train":
                for seed in range(int(s["seeds"])):
                    need("initial_weights", seed, 0, token=s["d"] + s["K"] + 1, group=(s["d"] + s["K"] + 4) // 4)
                    need(
                        "minibatches",
                        seed,
                        0,
                        step=s["steps"],
                        prompt=s["batch"],
                        token=s["N"] + 1,
                        group=(s["d"] + 3) // 4,
                    )
                for test_set in ("uniform", "separated"):
                    delta = float(s["delta"]) if test_set == "separated" else None
                    instance = stream.instance_of(test_set, s["test_size"], s["d"], s["N"], s["K"], delta)
                    need("test_set", test_seed, instance, prompt=s["test_size"], token=s["N"] + 1)
            elif kind == "binary":
                for seed in range(int(s["seeds"])):
                    need("initial_weights", seed, 0, token=s["d"] + 2)
                    need("minibatch_order", seed, 0, step=s["epochs"], prompt=s["train_size"])
                for test_set in ("train", "uniform", "separated"):
                    size = s["train_size"] if test_set == "train" else s["test_size"]
                    delta = float(s["delta"]) if test_set == "separated" else None
                    instance = stream.instance_of("binary", test_set, size, s["d"], s["N"], s["labels"], delta)
                    need("binary_set", test_seed, instance, prompt=size, token=s["N"] + 1)
            elif kind == "scaling":
                for point in points(config["experiments"][name]["panels"]):
                    instance = stream.instance_of(
                        point.panel, point.xi1, point.xi2, point.K, point.prompts, s["d"], s["N"]
                    )
                    need("scaling", int(s["seed"]), instance, prompt=point.prompts, token=s["N"] + 1)
            elif kind == "landscape":
                need("landscape", int(s["seed"]), 0, prompt=s["prompts"], token=s["N"] + 1)
            elif kind == "audit":
                for instance in (0, 2, 3):  # the weighted sample, the plain one, the quadrature's uniforms
                    need(
                        "audit",
                        int(s["seed"]),
                        instance,
                        prompt=s["n_plain"] + s["n_max"] * s["n_gap"],
                        token=s["N"] + 1,
                    )
    return out


def test_no_two_random_inputs_of_the_default_config_share_a_stream():
    streams = default_streams()
    keys = {stream.stream_key(seed, purpose, instance) for purpose, seed, instance in streams}
    assert len(keys) == len(streams)  # distinct keys: disjoint streams, whatever the counters
    assert {purpose for purpose, _, _ in streams} == set(stream.PURPOSES)  # the table has a use for every purpose
    # a run's minibatches and the next seed's initial weights (one seed apart, once the same generator's seed)
    seeds = {seed for purpose, seed, _ in streams if purpose == "minibatches"}
    assert all(stream.stream_key(k, "minibatches") != stream.stream_key(k + 1, "initial_weights") for k in seeds)
    for (purpose, seed, instance), reach in streams.items():
        for field, value in reach.items():
            assert value <= stream.BOUNDS[field], (purpose, seed, instance, field, value)


@pytest.mark.parametrize("n,index", [(1, 0), (300, 0), (10_000, 7), (1000, 2**23 - 1)])
def test_the_compiled_permutation_is_the_references(n, index):
    key = stream.stream_key(4, "minibatch_order")
    expected = stream.permutation(key, n, index)
    np.testing.assert_array_equal(cpu_stream.permutation(key, n, index), expected)
    assert sorted(expected.tolist()) == list(range(n))  # a permutation
    # word 0 of the call at (index, i, 1, 0, 0), sorted: the definition written out with the reference's words
    words = stream.randint4x(key, stream.counter(index, np.arange(n), stream.KIND_INTEGERS, 0, 0))[0]
    assert np.all(np.diff(words[expected].astype(np.int64)) >= 0)


def test_a_minibatch_that_overflows_a_counter_field_is_refused_by_name():
    stream.check_minibatch(1024, 2047, 2**20)  # every field at its bound
    for (d, N, batch), field in (((1025, 16, 128), "group"), ((8, 2048, 128), "token"), ((8, 16, 2**20 + 1), "prompt")):
        with pytest.raises(ValueError, match=f"at most {stream.BOUNDS[field]} of its field '{field}'"):
            stream.check_minibatch(d, N, batch)
    # the engine checks before it draws: 2049 tokens would wrap into the kind bit of the counter
    from onenn.maths.losses import Loss
    from onenn.training.cpu import Engine, FreshDraws

    with pytest.raises(ValueError, match="of its field 'token'"):
        Engine(np.zeros((12, 12)), d=8, N=2048, m=3, batch=1, lr=0.1, loss=Loss(), source=FreshDraws(KEY))

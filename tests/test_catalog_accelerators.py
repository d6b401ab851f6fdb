"""Tests for the accelerator catalog (accelerators.toml) and its loader's validation."""

import dataclasses
import re

import pytest

from descent.catalog import Accelerator, CatalogError, accelerators, load_accelerators

IDS = [
    "h100-sxm", "h200", "b200", "b300", "mi300x", "mi355x", "tpu-v7",
    "trainium3", "rtx-5090", "m3-ultra", "groq-lpu", "cerebras-wse-3",
]  # fmt: skip
FIELDS = [f.name for f in dataclasses.fields(Accelerator) if f.name not in ("id", "sources", "notes")]
GB, GIB = 10**9, 2**30


def test_ids_are_exactly_the_list():
    assert list(accelerators()) == IDS


@pytest.mark.parametrize("acc_id", IDS)
def test_every_field_has_a_source(acc_id):
    a = accelerators()[acc_id]
    assert a.sources.get("default", "").strip(), f"{acc_id}: sources.default missing"
    for name in FIELDS:
        assert a.source_of(name).strip(), f"{acc_id}.{name} has no source"
    # A field-specific source must name a real field (a typo would silently fall back to default).
    for key in a.sources:
        assert key == "default" or key in FIELDS, f"{acc_id}: sources.{key} is not a field"


@pytest.mark.parametrize("acc_id", IDS)
def test_marketed_capacity_matches_bytes(acc_id):
    # "80 GB" read as GiB must be exactly 80 * 2**30 bytes; decimal labels within 1%
    # (Groq's 220 MiB = 230.7 MB is sold as "230 MB").
    a = accelerators()[acc_id]
    number = float(re.match(r"([0-9.]+) (GB|MB)", a.memory_marketed).group(1))
    scale = {"GB": GB, "MB": 10**6}[a.memory_marketed.split()[1]]
    if a.memory_marketed_unit_is_gib:
        assert a.memory_bytes == number * GIB
    else:
        assert a.memory_bytes == pytest.approx(number * scale, rel=0.01)


def test_known_capacities():
    accs = accelerators()
    assert accs["h100-sxm"].memory_bytes == 85_899_345_920  # 80 * 2**30
    assert accs["h200"].memory_bytes == 151_397_597_184  # 141 * 2**30
    assert accs["rtx-5090"].memory_bytes == 34_359_738_368  # 32 * 2**30


@pytest.mark.parametrize("acc_id", IDS)
def test_dense_peaks_rise_as_precision_falls(acc_id):
    a = accelerators()[acc_id]
    peaks = [x for x in (a.bf16_flops, a.fp8_flops, a.fp4_flops) if x is not None]
    assert peaks == sorted(peaks)
    assert 2015 <= a.year <= 2026


def test_sram_machines_say_deployments_shard():
    for a in accelerators().values():
        if a.kind == "sram":
            # Their whole memory is on-chip SRAM: the two fields hold one number.
            assert a.memory_type == "SRAM" and a.memory_bytes == a.on_chip_memory_bytes
            assert a.l2_bytes is None
            assert "shard" in a.notes
    assert {a.id for a in accelerators().values() if a.kind == "sram"} == {"groq-lpu", "cerebras-wse-3"}


def test_on_chip_fields_name_what_they_hold():
    # Issue 8, section 3: one field used to mean L2 on a GPU and all memory on an SRAM machine.
    accs = accelerators()
    # H100 whitepaper, table 1: 50 MB L2 (recorded as 50 MiB), 256 KB registers and up to 228 KB
    # shared memory per SM, 4 tensor cores per SM.
    h = accs["h100-sxm"]
    assert (h.l2_bytes, h.register_file_per_unit_bytes, h.shared_memory_per_unit_bytes) == (
        50 * 2**20, 256 * 2**10, 228 * 2**10)
    assert h.tensor_cores_per_unit == 4 and h.on_chip_memory_bytes is None
    # AMD: 4 MB of L2 in each of 8 XCDs, and a 256 MB Infinity Cache behind it (CDNA 3 whitepaper).
    assert accs["mi300x"].l2_bytes == 8 * 4 * 2**20
    assert accs["mi300x"].last_level_cache_bytes == 256 * 2**20
    # Trainium3: 8 NeuronCores x 32 MiB SBUF, software-managed, not a cache.
    assert accs["trainium3"].on_chip_memory_bytes == 8 * 32 * 2**20 and accs["trainium3"].l2_bytes is None
    for a in accs.values():
        if a.kind == "gpu":
            assert a.on_chip_memory_bytes is None, a.id


def test_the_old_field_name_is_refused_with_the_new_names():
    with pytest.raises(CatalogError, match="sram_bytes is gone|sram_bytes was split") as e:
        load_accelerators(VALID.replace("year = 2024", "year = 2024\nsram_bytes = 0"))
    assert "l2_bytes" in str(e.value) and "on_chip_memory_bytes" in str(e.value)


@pytest.mark.parametrize("acc_id", IDS)
def test_gpu_clock_matches_the_peak(acc_id):
    # Where the clock is recorded, the dense BF16 peak is a whole number of FLOP per clock per unit:
    # H100 989.4e12 / (132 x 1.83e9) = 4,096; MI300X 1,307.4e12 / (304 x 2.1e9) = 2,048 (whitepapers).
    a = accelerators()[acc_id]
    if a.clock_hz is None:
        return
    per_clock = a.bf16_flops / (a.compute_units * a.clock_hz)
    assert per_clock == pytest.approx(round(per_clock), rel=0.002), (acc_id, per_clock)
    assert round(per_clock) in (512, 2048, 4096)


def test_unpublished_values_are_marked():
    # An on-chip field left out of a GPU row that has a field source must say it is not published.
    for a in accelerators().values():
        for name in ("l2_bytes", "on_chip_memory_bytes"):
            if getattr(a, name) is None and name in a.sources:
                assert "not published" in a.source_of(name), (a.id, name)


VALID = """
[chip]
name = "Chip"
vendor = "V"
kind = "gpu"
memory_bytes = 1024
memory_marketed = "1 KB"
memory_marketed_unit_is_gib = false
memory_type = "HBM3"
memory_bandwidth = 1e12
bf16_flops = 1e15
power_watts = 700
compute_units = 1
compute_units_name = "SM"
year = 2024
[chip.sources]
default = "datasheet"
"""


def test_valid_row_loads():
    assert load_accelerators(VALID)["chip"].memory_bandwidth == 1e12


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("memory_bytes = 1024\n", "", "memory_bytes"),  # missing
        ("memory_bandwidth = 1e12", "memory_bandwidth = -1e12", "memory_bandwidth"),  # negative
        ("memory_bandwidth = 1e12", "memory_bandwidth = 0", "memory_bandwidth"),  # not positive
        ("bf16_flops = 1e15", 'bf16_flops = "fast"', "bf16_flops"),  # wrong type
        ('kind = "gpu"', 'kind = "fpga"', "kind"),  # not an allowed kind
        ("year = 2024", "year = 2024\nclock = 2", "clock"),  # unknown field
        ("year = 2024", "year = 2024\nl2_bytes = 0", "l2_bytes"),  # 0 is not "not published"
        ('default = "datasheet"', 'memory_bytes = "x"', "sources.default"),  # no default source
    ],
)
def test_malformed_rows_name_file_row_field(old, new, field):
    text = VALID.replace(old, new)
    with pytest.raises(CatalogError) as e:
        load_accelerators(text, file="accelerators.toml")
    msg = str(e.value)
    assert msg.startswith("accelerators.toml: [chip]") and field in msg, msg

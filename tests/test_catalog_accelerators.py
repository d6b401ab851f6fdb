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
            assert a.memory_type == "SRAM" and a.memory_bytes == a.sram_bytes
            assert "shard" in a.notes
    assert {a.id for a in accelerators().values() if a.kind == "sram"} == {"groq-lpu", "cerebras-wse-3"}


def test_unpublished_values_are_marked():
    # sram_bytes = 0 means "not published"; such a row must say so in a field source.
    for a in accelerators().values():
        if a.sram_bytes == 0:
            assert "not published" in a.source_of("sram_bytes")


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
sram_bytes = 0
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
        ('default = "datasheet"', 'memory_bytes = "x"', "sources.default"),  # no default source
        ('default = "datasheet"', 'default = ""', "sources.default"),  # an empty source (issue 15)
        ('default = "datasheet"', 'default = "datasheet"\nyear = " "', "sources.year"),  # blank
        ('default = "datasheet"', 'default = "datasheet"\nclock = "x"', "sources.clock"),  # no such field
        # A value far beyond any real chip (issue 15): the row's problem, with the limit named.
        ("memory_bandwidth = 1e12", "memory_bandwidth = 1e30", "memory_bandwidth' = 1e+30 is outside its "
         "plausible range 1 to 1e+18 bytes/s (descent.catalog.PLAUSIBLE_ACCELERATOR)"),
        ("year = 2024", "year = 20240", "year' = 20,240 is outside its plausible range 1,990 to 2,100"),
    ],
)
def test_malformed_rows_name_file_row_field(old, new, field):
    text = VALID.replace(old, new)
    with pytest.raises(CatalogError) as e:
        load_accelerators(text, file="accelerators.toml")
    msg = str(e.value)
    assert msg.startswith("accelerators.toml: [chip]") and field in msg, msg

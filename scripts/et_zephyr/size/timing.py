# SPDX-License-Identifier: Apache-2.0
"""Instruction timings of the in-order Cortex-M cores, from their Technical Reference
Manuals (zero-wait-state memory), for `cycles.estimate`.

Cortex-M0 (DDI 0432C, Table 3-1), Cortex-M0+ (DDI 0484C, Table 3-1), Cortex-M3
(DDI 0337I, Table 3-1 and 3.3.2 "Load/store timings") and Cortex-M4 (DDI 0439B,
Table 3-1, 3.3.2 and Table 7-1 for the FPU). Where a TRM gives a range (a pipeline refill
P of 1 to 3 cycles, the M3's early-terminating long multiplies, 2 to 12 cycles of a
divide, the 32-cycle multiplier option of the M0 and M0+) an instruction has a low, a
middle and a high cost; the estimate is the middle, the range its bounds.

No model for the Cortex-M7 (dual issue, branch prediction, caches), the Cortex-M33 and
M23 (their TRMs publish no instruction timings; the M33 dual-issues some 16-bit pairs)
or the Cortex-M55 and M85 (beat-wise Helium overlap): `timing_for` says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

from ..errors import ExportError
from .disassembly import Instruction


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Instruction classes, the rows of the estimate's breakdown.
ALU = "data processing"
MULTIPLY = "multiply"
DIVIDE = "divide"
LOAD = "load"
STORE = "store"
MULTIPLE = "load/store multiple"
BRANCH = "branch"
FLOAT = "floating point"
SYSTEM = "system"
UNKNOWN = "not modelled"
CLASSES = (ALU, MULTIPLY, DIVIDE, LOAD, STORE, MULTIPLE, BRANCH, FLOAT, SYSTEM, UNKNOWN)


@dataclass(frozen=True)
class Range:
    """Cycles: the TRM's lowest, the estimate's, the TRM's highest."""

    low: float
    mid: float
    high: float

    @staticmethod
    def of(low: float, high: float | None = None) -> Range:
        high = low if high is None else high
        return Range(low, (low + high) / 2, high)

    def __add__(self, other: Range) -> Range:
        return Range(self.low + other.low, self.mid + other.mid, self.high + other.high)

    def __mul__(self, factor: float) -> Range:
        return Range(self.low * factor, self.mid * factor, self.high * factor)


ZERO = Range.of(0)


@dataclass(frozen=True)
class Cost:
    """One instruction: cycles each time it runs, and more each time it branches."""

    kind: str
    base: Range
    taken: Range = ZERO  # the pipeline refill of a taken branch (a write to the PC)


@dataclass(frozen=True)
class Core:
    name: str
    known: frozenset[str]  # the mnemonics `cost` knows, for Instruction.base
    refill: Range  # P: a taken branch's pipeline refill
    exception: Range  # entering an exception and returning from it
    # M3/M4: a load or store after an LDR overlaps it; one whose address a data-processing
    # instruction just wrote waits a cycle for the register bank.
    pipelined_loads: bool
    costs: Callable[[Core, Instruction], Cost]  # the architecture's table

    def cost(self, instruction: Instruction) -> Cost:
        return self.costs(self, instruction)


# Register names in operands; register lists "{r4, r5, r6, lr}" or "{d8-d15}".
_REGISTER = re.compile(r"\b(r\d+|sl|fp|ip|sp|lr|pc)\b")
_LIST = re.compile(r"\{([^}]*)\}")


def register_count(operands: str) -> int:
    """Registers in the instruction's list: a range such as "d8-d15" counts each
    (double-precision registers as two words each)."""
    match = _LIST.search(operands)
    if match is None:
        return 0
    count = 0
    for item in match.group(1).split(","):
        item = item.strip()
        words = 2 if item.startswith("d") else 1
        if "-" in item:
            first, last = (int(re.sub(r"\D", "", end)) for end in item.split("-"))
            count += (last - first + 1) * words
        elif item:
            count += words
    return count


def writes_pc(instruction: Instruction) -> bool:
    """Loads of the PC and data processing into it (branches are classed by name)."""
    operands = instruction.operands
    listed = _LIST.search(operands)
    if listed is not None:
        return "pc" in _REGISTER.findall(listed.group(1))
    return operands.split(",")[0].strip() == "pc"


def address_registers(instruction: Instruction) -> set[str]:
    """The registers a load or store computes its address from."""
    match = re.search(r"\[([^\]]*)\]", instruction.operands)
    return set(_REGISTER.findall(match.group(1))) if match else set()


def destination(instruction: Instruction) -> str | None:
    """The register a data-processing instruction or a single load writes (its first)."""
    first = instruction.operands.split(",")[0].strip()
    return first if _REGISTER.fullmatch(first) else None


def register_offset(instruction: Instruction) -> bool:
    """A store whose address adds a register ([r0, r1] or [r0, r1, lsl #2])."""
    return len(address_registers(instruction)) > 1


_NO_DESTINATION = frozenset({"cmp", "cmn", "tst", "teq", "it", "nop"})

# ARMv6-M and ARMv7-M data processing: one cycle on every core here.
_DATA = _names(
    """mov movw movt mvn add addw adc adr sub subw sbc rsb neg and orr eor bic orn
    cmp cmn tst teq lsl lsr asr ror rrx ssat usat clz rbit rev rev16 revsh sxtb sxth
    uxtb uxth sxtab sxtah uxtab uxtah bfc bfi sbfx ubfx nop sev yield"""
)
# IT and its then/else forms (ITTE, ...): one cycle, or none when the core folds it onto
# the 16-bit instruction before it.
_IT = frozenset("it" + "".join(form) for n in range(4) for form in product("te", repeat=n))
# The DSP extension's single-cycle data processing (M4).
_DSP = _names(
    """sxtb16 uxtb16 sxtab16 uxtab16 sadd16 sadd8 ssub16 ssub8 sasx ssax uadd16 uadd8
    usub16 usub8 uasx usax qadd qsub qdadd qdsub qadd16 qadd8 qsub16 qsub8 qasx qsax
    uqadd16 uqadd8 uqsub16 uqsub8 uqasx uqsax shadd16 shadd8 shsub16 shsub8 shasx shsax
    uhadd16 uhadd8 uhsub16 uhsub8 uhasx uhsax ssat16 usat16 pkhbt pkhtb sel usad8
    usada8"""
)
_DSP_MULTIPLY = _names(
    """smlabb smlabt smlatb smlatt smlawb smlawt smulbb smulbt smultb smultt smulwb
    smulwt smlad smladx smlsd smlsdx smuad smuadx smusd smusdx smlald smlaldx smlsld
    smlsldx smlalbb smlalbt smlaltb smlaltt smmul smmulr smmla smmlar smmls smmlsr
    umaal"""
)
_LOADS = _names("ldr ldrb ldrh ldrsb ldrsh ldrt ldrbt ldrht ldrsbt ldrsht ldrex ldrexb ldrexh pld")
_STORES = _names("str strb strh strt strbt strht strex strexb strexh")
_MULTIPLES = _names("ldm ldmia ldmfd ldmdb ldmea stm stmia stmea stmdb stmfd push pop")
_BRANCHES = _names("b bl bx blx cbz cbnz tbb tbh")
_SYSTEM = _names("mrs msr cpsid cpsie dmb dsb isb svc wfi wfe bkpt udf")
_FLOAT_ONE = _names(
    "vadd vsub vmul vnmul vabs vneg vcvt vcvtr vcvta vcvtn vcvtp vcvtm vcmp vcmpe vmov vmrs vmsr"
)
_FLOAT_FUSED = _names("vmla vmls vnmla vnmls vfma vfms vfnma vfnms")
_FLOAT_LONG = frozenset({"vdiv", "vsqrt"})
_FLOAT_MEMORY = frozenset({"vldr", "vstr"})
_FLOAT_MULTIPLE = _names("vldm vldmia vldmdb vstm vstmia vstmdb vpush vpop")

_V6M = _DATA | {"mul"} | _LOADS | _STORES | _MULTIPLES | _BRANCHES | _SYSTEM
_V7M = (
    _V6M | _IT | {"mla", "mls", "smull", "umull", "smlal", "umlal", "sdiv", "udiv", "ldrd", "strd"}
)
_V7EM = _V7M | _DSP | _DSP_MULTIPLY | _FLOAT_ONE | _FLOAT_FUSED | _FLOAT_LONG
_V7EM = _V7EM | _FLOAT_MEMORY | _FLOAT_MULTIPLE


def _v6m_cost(core: Core, instruction: Instruction) -> Cost:
    """Cortex-M0 and M0+: every refill is fixed (M0 two cycles, M0+ one), loads and
    stores two cycles, MULS one (or 32 with the small multiplier)."""
    name = instruction.base(core.known)
    p = core.refill
    one = Range.of(1)
    if name in _MULTIPLES:
        n = register_count(instruction.operands)
        if writes_pc(instruction):
            # POP {..., pc}: M0 4 + N, M0+ 3 + N.
            return Cost(BRANCH, Range.of(2 + n), p)
        return Cost(MULTIPLE, Range.of(1 + n))
    if name in _BRANCHES:
        # B 1 + P, BL 2 + P (M0: 3 and 4; M0+: 2 and 3), BX and BLX 1 + P.
        return Cost(BRANCH, Range.of(2) if name == "bl" else one, p)
    if name in _LOADS:
        return Cost(LOAD, Range.of(2))
    if name in _STORES:
        return Cost(STORE, Range.of(2))
    if name == "mul":
        return Cost(MULTIPLY, Range.of(1, 32))
    if name in ("mrs", "msr", "dmb", "dsb", "isb"):
        # M0 four cycles, M0+ three: one more than a taken B.
        return Cost(SYSTEM, one + p + one)
    if name == "wfi":
        return Cost(SYSTEM, Range.of(2))
    if name in ("svc", "bkpt", "udf"):
        return Cost(SYSTEM, ZERO)  # the exception entry is the cost
    if name in _DATA or name in _SYSTEM:
        if writes_pc(instruction):  # MOV PC / ADD PC
            return Cost(BRANCH, one, p)
        return Cost(ALU if name in _DATA else SYSTEM, one)
    return Cost(UNKNOWN, one)


def _v7m_cost(core: Core, instruction: Instruction) -> Cost:
    """Cortex-M3 and M4 (Table 3-1; the M4 adds single-cycle long multiplies, DSP
    instructions and the FPU of Table 7-1). Pipelining of neighbouring loads and the
    address-dependency stall are `cycles.estimate`'s, which sees the neighbours."""
    name = instruction.base(core.known)
    m4 = core.name == "Cortex-M4"
    p = core.refill
    one = Range.of(1)
    if name in _MULTIPLES:
        n = register_count(instruction.operands)
        if writes_pc(instruction):
            return Cost(BRANCH, Range.of(1 + n), p)
        return Cost(MULTIPLE, Range.of(1 + n))
    if name in _BRANCHES:
        # 1 + P; TBB and TBH load two cycles and add one before the refill (3.3.2).
        return Cost(BRANCH, Range.of(3) if name in ("tbb", "tbh") else one, p)
    if name in _LOADS:
        if writes_pc(instruction):
            return Cost(BRANCH, Range.of(2), p)
        return Cost(LOAD, Range.of(2))
    if name in ("ldrd", "strd"):
        return Cost(LOAD if name == "ldrd" else STORE, Range.of(3))
    if name in _STORES:
        # STR Rx, [Ry, #imm] is one cycle (3.3.2); with a register offset nothing
        # overlaps it: two.
        return Cost(STORE, Range.of(2 if register_offset(instruction) else 1))
    if name == "mul":
        return Cost(MULTIPLY, one)
    if name in ("mla", "mls"):
        return Cost(MULTIPLY, Range.of(1 if m4 else 2))
    if name in ("smull", "umull"):
        return Cost(MULTIPLY, one if m4 else Range.of(3, 5))
    if name in ("smlal", "umlal"):
        return Cost(MULTIPLY, one if m4 else Range.of(4, 7))
    if name in _DSP_MULTIPLY:
        return Cost(MULTIPLY, one)
    if name in ("sdiv", "udiv"):
        return Cost(DIVIDE, Range.of(2, 12))
    if name in _IT:
        return Cost(ALU, Range.of(0, 1))
    if name in _FLOAT_ONE:
        return Cost(FLOAT, Range.of(2) if _two_core_registers(instruction) else one)
    if name in _FLOAT_FUSED:
        return Cost(FLOAT, Range.of(3))
    if name in _FLOAT_LONG:
        return Cost(FLOAT, Range.of(14))
    if name in _FLOAT_MEMORY:
        return Cost(FLOAT, Range.of(2))
    if name in _FLOAT_MULTIPLE:
        return Cost(FLOAT, Range.of(1 + register_count(instruction.operands)))
    if name in ("mrs", "msr", "cpsid", "cpsie"):
        return Cost(SYSTEM, Range.of(1, 2))
    if name == "isb":
        return Cost(SYSTEM, one + p)
    if name in ("dmb", "dsb", "wfi", "wfe"):
        # 1 + B (a barrier's wait, at least 0) or 1 + W (sleep): the least.
        return Cost(SYSTEM, one)
    if name in ("svc", "bkpt", "udf"):
        return Cost(SYSTEM, ZERO)  # the exception entry is the cost
    if name in _DATA or name in _DSP:
        if writes_pc(instruction):  # MOV PC / ADD PC
            return Cost(BRANCH, one, p)
        return Cost(ALU, one)
    return Cost(UNKNOWN, one)


def neighbour_cycles(core: Core, previous: Instruction, instruction: Instruction) -> int:
    """Cycles `instruction` gains (or loses) when it runs straight after `previous` on
    the M3 and M4 (3.3.2): a load or store after a single LDR that does not compute its
    address from the loaded register overlaps it (one cycle less, down to one); one whose
    address register the data-processing instruction before it wrote waits a cycle."""
    if not core.pipelined_loads:
        return 0
    name = instruction.base(core.known)
    if name not in _LOADS and name not in _STORES or writes_pc(instruction):
        return 0
    before = previous.base(core.known)
    operands = address_registers(instruction)
    if before in _LOADS and not writes_pc(previous):
        overlaps = destination(previous) not in operands
        return -1 if overlaps and core.cost(instruction).base.low >= 2 else 0
    computes = (before in _DATA or before in _DSP) and before not in _NO_DESTINATION
    multiplies = before in ("mul", "mla", "mls") or before in _DSP_MULTIPLY
    return 1 if (computes or multiplies) and destination(previous) in operands else 0


def _two_core_registers(instruction: Instruction) -> bool:
    """VMOV between two core registers and two S (or one D) registers: two cycles."""
    return len(_REGISTER.findall(instruction.operands)) == 2


CORES = {
    # Exceptions: the TRM's interrupt latency to enter, and as much assumed to return
    # (unstacking eight words and a refill); tail-chaining is not modelled.
    "Cortex-M0": Core("Cortex-M0", frozenset(_V6M), Range.of(2), Range.of(32), False, _v6m_cost),
    "Cortex-M0+": Core("Cortex-M0+", frozenset(_V6M), Range.of(1), Range.of(30), False, _v6m_cost),
    "Cortex-M3": Core("Cortex-M3", frozenset(_V7M), Range.of(1, 3), Range.of(24), True, _v7m_cost),
    "Cortex-M4": Core("Cortex-M4", frozenset(_V7EM), Range.of(1, 3), Range.of(24), True, _v7m_cost),
}

NOT_MODELLED = {
    "Cortex-M7": "it issues two instructions a cycle, predicts branches and has caches",
    "Cortex-M23": "its Technical Reference Manual publishes no instruction timings",
    "Cortex-M33": "its Technical Reference Manual publishes no instruction timings, and it "
    "issues some pairs of 16-bit instructions together",
    "Cortex-M55": "its Helium instructions overlap beat by beat",
    "Cortex-M85": "it issues several instructions a cycle and its Helium instructions overlap",
}


def timing_for(cpu: str) -> Core:
    """The timing model of a core ("Cortex-M4"); an error that says why for the others."""
    if cpu in CORES:
        return CORES[cpu]
    why = NOT_MODELLED.get(cpu, "no timing model for it")
    raise ExportError(f"no cycle estimate for the {cpu}: {why}; the instruction count stands")

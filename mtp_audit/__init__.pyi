"""Types of the names :mod:`mtp_audit` loads lazily (the real definitions, re-exported: ``X as X``)."""

from mtp_audit.checkpoint import (
    audit_checkpoint as audit_checkpoint,
)
from mtp_audit.compare.analyze import (
    compare_checkpoints as compare_checkpoints,
)
from mtp_audit.engines.sglang.audit import (
    audit_sglang as audit_sglang,
)
from mtp_audit.engines.sglang.diff import (
    diff_sglang as diff_sglang,
)
from mtp_audit.engines.vllm.audit import (
    audit_vllm as audit_vllm,
)
from mtp_audit.engines.vllm.diff import (
    diff_vllm as diff_vllm,
)
from mtp_audit.errors import (
    InputError as InputError,
)
from mtp_audit.formats import (
    render as render,
)
from mtp_audit.launch import (
    audit_launch as audit_launch,
)
from mtp_audit.preflight import (
    audit_machine as audit_machine,
    preflight as preflight,
)
from mtp_audit.report import (
    Evidence as Evidence,
    Finding as Finding,
    Gap as Gap,
    Location as Location,
    Report as Report,
    Severity as Severity,
    Status as Status,
    exit_code as exit_code,
)
from mtp_audit.report.rules import (
    Rule as Rule,
    all_rules as all_rules,
    get_rule as get_rule,
)
from mtp_audit.results import (
    BackendChoice as BackendChoice,
    CheckpointFacts as CheckpointFacts,
    Configured as Configured,
    Fp4Readiness as Fp4Readiness,
    LaunchResult as LaunchResult,
    LaunchVerdict as LaunchVerdict,
    apply_config as apply_config,
    checkpoint_facts as checkpoint_facts,
    fp4_readiness as fp4_readiness,
    launch_result as launch_result,
)

__version__: str
__all__: list[str]

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
)
from mtp_audit.preflight import (
    preflight as preflight,
)
from mtp_audit.report import (
    Evidence as Evidence,
)
from mtp_audit.report import (
    Finding as Finding,
)
from mtp_audit.report import (
    Gap as Gap,
)
from mtp_audit.report import (
    Location as Location,
)
from mtp_audit.report import (
    Report as Report,
)
from mtp_audit.report import (
    Severity as Severity,
)
from mtp_audit.report import (
    Status as Status,
)
from mtp_audit.report import (
    exit_code as exit_code,
)
from mtp_audit.report.rules import (
    Rule as Rule,
)
from mtp_audit.report.rules import (
    all_rules as all_rules,
)
from mtp_audit.report.rules import (
    get_rule as get_rule,
)
from mtp_audit.results import (
    BackendChoice as BackendChoice,
)
from mtp_audit.results import (
    CheckpointFacts as CheckpointFacts,
)
from mtp_audit.results import (
    Configured as Configured,
)
from mtp_audit.results import (
    Fp4Readiness as Fp4Readiness,
)
from mtp_audit.results import (
    LaunchResult as LaunchResult,
)
from mtp_audit.results import (
    LaunchVerdict as LaunchVerdict,
)
from mtp_audit.results import (
    apply_config as apply_config,
)
from mtp_audit.results import (
    checkpoint_facts as checkpoint_facts,
)
from mtp_audit.results import (
    fp4_readiness as fp4_readiness,
)
from mtp_audit.results import (
    launch_result as launch_result,
)

__version__: str
__all__: list[str]

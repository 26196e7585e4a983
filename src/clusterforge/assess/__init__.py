"""The assessment layer: what a design delivers, computed once, returned typed.

The presentation layers (:mod:`clusterforge.cli`, :mod:`clusterforge.report`,
:mod:`clusterforge.web`) reach the models only through this package: they call
:func:`assess` (``plan``, ``report``, ``serve``), :func:`predict`, :func:`simulate` or
:func:`goodput_study`, and render the typed results. The result types and vocabularies they
render are re-exported here so that no presenter imports :mod:`clusterforge.perf`,
:mod:`clusterforge.netsim` or :mod:`clusterforge.goodput` itself.

Parts: :mod:`.performance` (the spec's plan, the best plans, ``predict``), :mod:`.lifetime`
(failures, checkpoints and spares), :mod:`.fabric` (simulated collectives), :mod:`.economics`
(TCO and the break-even size), :mod:`.assessment` (the whole, and its options).
"""

from clusterforge.assess.assessment import QUICK, REPORT, Assessment, AssessOptions, assess
from clusterforge.assess.calibration import load_calibration
from clusterforge.assess.economics import (
    BREAK_EVEN_MAX_GPUS,
    Economics,
    break_even_gpus,
    economics,
)
from clusterforge.assess.fabric import BUSBW_SIZES, busbw_study, simulate
from clusterforge.assess.lifetime import (
    GoodputOutlook,
    SpareOption,
    goodput_outlook,
    goodput_study,
    spare_outlook,
)
from clusterforge.assess.performance import (
    ExpectedPerformance,
    PlanDoesNotFit,
    PredictAssessment,
    expected_performance,
    predict,
    top_plans,
)
from clusterforge.assess.unavailable import Unavailable
from clusterforge.design.spares import SpareMode, SparesHeld, spares_held
from clusterforge.goodput import Expected, GoodputReport, LostTime
from clusterforge.netsim.result import CollectiveResult
from clusterforge.netsim.study import (
    DEFAULT_SWEEP,
    DTYPE_BYTES,
    Study,
    StudyRequest,
    parse_size,
    parse_sweep,
)
from clusterforge.netsim.vocab import (
    ALGORITHMS,
    COLLECTIVES,
    COMMUNICATORS,
    PLACEMENTS,
    PROTOCOLS,
    ROUTINGS,
    AlgorithmChoice,
    Collective,
    Communicators,
    Placement,
    ProtocolChoice,
    Routing,
)
from clusterforge.perf import (
    FLOP_CONVENTION,
    STACK_NAMES,
    Calibration,
    CalibrationChange,
    ParallelPlan,
    PlanOverrides,
    Prediction,
    PredictOutcome,
    PredictRequest,
)
from clusterforge.perf.ep_overlap_rules import EP_OVERLAP_RULES
from clusterforge.perf.flops import Recompute
from clusterforge.perf.parallel import Precision

__all__ = [
    "ALGORITHMS",
    "BREAK_EVEN_MAX_GPUS",
    "BUSBW_SIZES",
    "COLLECTIVES",
    "COMMUNICATORS",
    "DEFAULT_SWEEP",
    "DTYPE_BYTES",
    "EP_OVERLAP_RULES",
    "FLOP_CONVENTION",
    "PLACEMENTS",
    "PROTOCOLS",
    "QUICK",
    "REPORT",
    "ROUTINGS",
    "STACK_NAMES",
    "AlgorithmChoice",
    "AssessOptions",
    "Assessment",
    "Calibration",
    "CalibrationChange",
    "Collective",
    "CollectiveResult",
    "Communicators",
    "Economics",
    "Expected",
    "ExpectedPerformance",
    "GoodputOutlook",
    "GoodputReport",
    "LostTime",
    "ParallelPlan",
    "Placement",
    "PlanDoesNotFit",
    "PlanOverrides",
    "Precision",
    "PredictAssessment",
    "PredictOutcome",
    "PredictRequest",
    "Prediction",
    "ProtocolChoice",
    "Recompute",
    "Routing",
    "SpareMode",
    "SpareOption",
    "SparesHeld",
    "Study",
    "StudyRequest",
    "Unavailable",
    "assess",
    "break_even_gpus",
    "busbw_study",
    "economics",
    "expected_performance",
    "goodput_outlook",
    "goodput_study",
    "load_calibration",
    "parse_size",
    "parse_sweep",
    "predict",
    "simulate",
    "spare_outlook",
    "spares_held",
    "top_plans",
]

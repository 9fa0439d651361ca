"""The rule catalog: one module per rule, named after its ID (QC001 lives in qc001.py).

``RULES`` is the whole catalog in the order ``govern rules`` lists it (query cache, batching,
meta); a new rule is a new module and one line here. Helpers shared by a family live in
query_cache.py, batching.py and parsing.py.
"""

from __future__ import annotations

from govern.rules.base import Rule
from govern.rules.catalog.batch001 import PlaceholderLimit
from govern.rules.catalog.batch002 import PacketShare
from govern.rules.catalog.batch003 import RowsPerStatement
from govern.rules.catalog.batch004 import OdkuIfChain
from govern.rules.catalog.batch005 import OdkuValuesDeprecated
from govern.rules.catalog.batch006 import OdkuSyntaxUnsupported
from govern.rules.catalog.batch007 import LoopRowAtATime
from govern.rules.catalog.batch008 import SingleRowRun
from govern.rules.catalog.batch009 import NPlusOneReads
from govern.rules.catalog.batch010 import UnboundedBatchWrite
from govern.rules.catalog.batch011 import InsertSelectWholeTable
from govern.rules.catalog.meta001 import ParseError
from govern.rules.catalog.meta002 import BadSuppression
from govern.rules.catalog.meta003 import UnusedSuppression
from govern.rules.catalog.qc001 import SqlCacheUnsafe
from govern.rules.catalog.qc002 import SqlCachePlacement
from govern.rules.catalog.qc003 import QueryCacheUnavailable
from govern.rules.catalog.qc004 import SqlCacheNeverStored
from govern.rules.catalog.qc005 import SqlCachePolicy
from govern.rules.catalog.qc006 import SqlCacheCandidate
from govern.rules.catalog.qc007 import SqlCacheIneffective

RULES: tuple[type[Rule], ...] = (
    SqlCacheUnsafe,
    SqlCachePlacement,
    QueryCacheUnavailable,
    SqlCacheNeverStored,
    SqlCachePolicy,
    SqlCacheCandidate,
    SqlCacheIneffective,
    PlaceholderLimit,
    PacketShare,
    RowsPerStatement,
    OdkuIfChain,
    OdkuValuesDeprecated,
    OdkuSyntaxUnsupported,
    LoopRowAtATime,
    SingleRowRun,
    NPlusOneReads,
    UnboundedBatchWrite,
    InsertSelectWholeTable,
    ParseError,
    BadSuppression,
    UnusedSuppression,
)

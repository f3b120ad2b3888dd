"""Flags on accepted text: `ephemeral` (time-bound notes) and `suspicious` (agent-directed text).

Both read the redacted text and never refuse on their own; the screen refuses `suspicious` text
only in the shared scope, where one agent's note reaches every other agent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memvault.screening._model import Finding

EPHEMERAL = "ephemeral"
SUSPICIOUS = "suspicious"
INJECTION = "injection"

_EPHEMERAL_EN = re.compile(
    r"\b(?:tomorrow|tonight|yesterday|later\s+today|earlier\s+today|this\s+(?:morning|afternoon|"
    r"evening)|right\s+now|for\s+now|at\s+the\s+moment|in\s+a\s+(?:few|couple\s+of)\s+"
    r"(?:minutes|hours)|in\s+an?\s+hour|waiting\s+(?:for|on)\s+(?:confirmation|approval|review|"
    r"feedback|a\s+reply|the\s+reply|response)|pending\s+(?:confirmation|approval|review)|"
    r"to\s+be\s+confirmed|tbd|tbc|eod|end\s+of\s+(?:the\s+)?day|todo|to-do|in\s+progress|"
    r"(?:still|currently)\s+(?:running|waiting|pending|in\s+progress)|not\s+yet\s+(?:run|done|"
    r"confirmed|merged|deployed)|until\s+further\s+notice)\b",
    re.IGNORECASE,
)
_EPHEMERAL_ZH = re.compile(
    r"待跑|待确认|待確認|等确认|等確認|待定|待办|待辦|待处理|待處理|待审核|待審核|进行中|進行中|"
    r"昨日|昨天|今天|今日|今晚|明天|明日|后天|後天|稍后|稍後|马上|馬上|刚刚|剛剛|目前|暂时|暫時|"
    r"正在跑|正在运行|正在處理|正在处理|跑完|还没跑|還沒跑|下午|上午|今早|等.{0,6}回复|等.{0,6}回覆"
)

_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|my\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|original|system|existing)\s+"
    r"(?:instructions?|prompts?|rules|messages|directions|guidelines|context|constraints)|"
    r"\b(?:ignore|disregard|reveal|print|show|leak|repeat)\s+(?:\w+\s+){0,3}system\s+prompt|"
    r"\byou\s+(?:must|will|should|shall)\s+now\b|\bfrom\s+now\s+on,?\s+you\s+(?:are|must|will|"
    r"shall|should)\b|\byou\s+are\s+now\s+(?:a|an|in|the|DAN|my)\b|\bnew\s+(?:system\s+)?"
    r"instructions?\s*:|\bdo\s+not\s+(?:tell|inform|alert)\s+the\s+user\b|"
    r"\bact\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?(?:unrestricted|jailbroken|DAN)\b",
    re.IGNORECASE,
)
_INJECTION_ZH = re.compile(
    r"(?:忽略|无视|無視|忽视|忽視|不要理会|不要理會)(?:掉)?(?:之前|以上|上面|先前|前面|所有|全部|系统)"
    r".{0,6}(?:指令|指示|提示|规则|規則|说明|說明)|你现在必须|你現在必須|从现在开始你|從現在開始你|"
    r"系统提示词|系統提示詞"
)
_TOOL_CALL = re.compile(
    r"</?(?:tool_call|tool_use|function_calls?|invoke|antml:[a-z_]+|system|im_start|im_end)\b|"
    r"<\|im_(?:start|end)\|>|\[/?INST\]|<<SYS>>|\"tool_calls\"\s*:|"
    r"\{\s*\"(?:name|tool|function)\"\s*:\s*\"[^\"]{1,64}\"\s*,\s*\"(?:arguments|parameters|"
    r"input|args)\"\s*:",
    re.IGNORECASE,
)
_EXFILTRATION = re.compile(
    # a markdown image or link whose URL carries a query string: rendering it sends data
    r"!\[[^\]]{0,200}\]\(\s*https?://[^)\s]*\?[^)\s]*=|"
    r"\]\(\s*https?://[^)\s]*\?[^)\s]*=[^)\s]*(?:\{|\$|%7B)|"
    r"\b(?:send|post|upload|forward|exfiltrate|leak|transmit|submit|email)\s+(?:\w+\s+){0,6}?"
    r"(?:to|at|via)\s+(?:https?://|ftp://|\S+@\S+\.\w+)|"
    r"\b(?:curl|wget|fetch|requests\.(?:get|post))\b[^\n]{0,80}https?://[^\s]*(?:\{|\$\(|%7B|"
    r"\?\S*=\$)",
    re.IGNORECASE,
)
_ENVELOPE = re.compile(
    # text that imitates the result envelope a recalled memory is shown in, to end it early
    # and start a "notice" of its own: an envelope tag, or a JSON key of the envelope
    r"</?(?:memories|memory|recalled_memor(?:y|ies)|notice|tool_result|function_results)\s*>|"
    r"\{\s*\\?[\"'](?:notice|memories|structuredContent|isError)\\?[\"']\s*:|"
    r"memvault\.recalled_memory|[\"']\s*\}\s*\]\s*\}",
    re.IGNORECASE,
)
_INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("instruction_override", _INJECTION),
    ("envelope_markup", _ENVELOPE),
    ("instruction_override_zh", _INJECTION_ZH),
    ("tool_call_markup", _TOOL_CALL),
    ("url_exfiltration", _EXFILTRATION),
)


def ephemeral_findings(text: str) -> Iterator[Finding]:
    """Temporal signal words, English and Chinese."""
    for regex in (_EPHEMERAL_EN, _EPHEMERAL_ZH):
        for m in regex.finditer(text):
            yield Finding("temporal_signal", EPHEMERAL, m.start(), m.end())


def injection_findings(text: str) -> Iterator[Finding]:
    """Text addressed to an agent: instruction overrides, tool-call markup, exfiltration URLs."""
    for detector, regex in _INJECTION_PATTERNS:
        for m in regex.finditer(text):
            yield Finding(detector, INJECTION, m.start(), m.end())

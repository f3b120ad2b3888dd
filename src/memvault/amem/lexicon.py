"""Word lists the `HeuristicJudge` decides by: categories, note-type cues, evolution cues and the
dialogue gate's filters, in English and Chinese.

Words are lowercase and unstemmed; the judge matches them against both the surface tokens and the
stemmed tokens of a text, and multi-word cues against the lowercased text itself.
"""

from __future__ import annotations

import re

from memvault.amem.views import Category


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


CATEGORY_WORDS: dict[Category, frozenset[str]] = {
    "Technical": _words(
        """code python typescript javascript rust java api database sql postgres postgresql
        sqlite qdrant server bug deploy deployment docker kubernetes library function compiler
        git github linux script endpoint http json schema query index cache latency cpu gpu
        代码 数据库 服务器 接口 部署 编程 函数 脚本 索引 缓存"""
    ),
    "Business": _words(
        """customer customers client clients revenue sales contract budget invoice market
        price pricing finance financial profit deal vendor supplier company startup investor
        meeting quarterly payroll
        客户 合同 销售 预算 发票 市场 价格 金融 公司 利润 投资"""
    ),
    "Personal": _words(
        """sister brother mother father mom dad wife husband daughter son family friend
        birthday hobby likes loves enjoys prefers lives live moved home car pet dog cat
        vacation holiday health doctor allergic favorite favourite buy bought wants
        妹妹 姐姐 哥哥 弟弟 妈妈 爸爸 家人 朋友 生日 爱好
        喜欢 住 搬家 宠物 假期 医生 汽车"""
    ),
    "Project": _words(
        """project deadline milestone sprint release roadmap task tasks ticket launch
        deliverable backlog standup scope team
        项目 截止 里程碑 发布 任务 上线 进度"""
    ),
    "Research": _words(
        """paper papers study experiment experiments dataset hypothesis benchmark arxiv
        research survey evaluation results citation thesis model models
        论文 研究 实验 数据集 假设 基准 评测"""
    ),
    "System": _words(
        """config configuration setting settings agent agents prompt log logs cron memory
        system service environment variable permission permissions plugin hook
        配置 系统 设置 日志 权限 插件 环境"""
    ),
    "General": frozenset(),
}

TAG_WORDS: dict[str, frozenset[str]] = {
    "family": _words(
        "sister brother mother father mom dad wife husband daughter son family "
        "妹妹 姐姐 哥哥 弟弟 妈妈 爸爸 家人"
    ),
    "location": _words("lives live moved move relocated city town address home 住 住在 搬家 搬到"),
    "purchase": _words("buy bought purchase purchased order ordered 买 购买"),
    "work": _words("job work works office career employer colleague 工作 公司 同事"),
    "schedule": _words(
        "deadline meeting appointment monday tuesday wednesday thursday friday saturday "
        "sunday tomorrow 截止 会议 周一 周二 周三 周四 周五 明天"
    ),
    "finance": _words("finance financial budget money salary 金融 预算 工资"),
    "preference": _words("likes loves prefers favorite favourite enjoys 喜欢 偏好"),
}

GENERIC_SUBJECTS = _words("user users user's person someone 用户")
"""Words that name the note's owner: shared by almost every note, so never evidence of a topic."""

WEAK_WORDS = _words(
    """want wants wanted plan plans planning planned consider considering decided decide
    decid chose choose choos bought buy switched switch moved move live lives liv has have
    get gets got make makes made use uses used like also said says told think thinks know
    knows need needs going go goes really thing things longer anymore
    stop stopped quit always never usually often sometimes named name called
    决定 打算 计划 考虑 觉得 知道"""
)
"""Verbs and fillers that carry a note's grammar, not its subject: never keywords."""

# Evolution cues: an intention in the old note, a decision or completion in the new one.
INTENT = re.compile(
    r"\b(wants?|wanted|would like|plans?|planning|intends?|considering|thinking (?:about|of)|"
    r"hopes?|looking (?:at|for|to)|might)\b|想|打算|计划|考虑|希望|准备"
)
DECISION = re.compile(
    r"\b(decided|chose|chosen|bought|purchased|switched|picked|settled on|went with|ordered|"
    r"booked|signed|adopted|accepted|joined|moved|started|finished|got)\b|"
    r"决定|选择了|选了|买了|已购买|换成|改用|订了|搬到|开始|完成"
)
NEGATION = re.compile(
    r"\b(no longer|not anymore|anymore|not|never|stopped|quit|doesn't|don't|didn't|isn't|"
    r"aren't|wasn't|no more|cancel(?:l?ed)?)\b|不再|已经不|不是|没有了|取消|停止|放弃|戒了"
)
"""Negation and ending cues, matched on the lowercased text (apostrophes normalized)."""

# "<subject> lives in X", "moved to X", "用户住在X" — the place slot of a note.
PLACE_EN = re.compile(
    r"\b(?:lives?|living|lived|resides?|residing|based|located|moved|moving|relocated|"
    r"relocating|stays?|staying)\s+(?:in|to|at)\s+(?P<value>[\w'\- ]+)",
    re.IGNORECASE,
)
PLACE_ZH = re.compile(
    r"(?:住在|居住在|搬到了?|搬去了?|搬家到|定居在?|位于|生活在)(?P<value>[^\s，。,.;；!！?？]+)"
)

WEEKDAYS_AND_MONTHS = _words(
    """monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december today tomorrow yesterday
    周一 周二 周三 周四 周五 周六 周日 星期一 星期二 星期三
    星期四 星期五 星期六 星期日 今天 明天 昨天"""
)

# Note type: durable knowledge against episodes of a person's life.
KNOWLEDGE_STRONG = re.compile(
    r"\b(always|never|rule|rules|must|by default|policy|convention|is defined as|refers to|"
    r"stands for|means that|how to|in general)\b|"
    r"总是|从不|规则|原则|必须|默认|定义|指的是|如何|方法|步骤"
)
KNOWLEDGE_WEAK = re.compile(
    r"\b(is an?|are|use|uses|requires?|supports?|returns?|provides?|consists of|to \w+, run)\b|"
    r"是一种|是一个|用于|支持"
)
MEMORY_CUES = re.compile(
    r"\b(i|i'm|i've|my|me|we|our|the user|user's|yesterday|today|tomorrow|last (?:week|month|"
    r"year|night)|this (?:week|morning|evening)|next (?:week|month)|ago|on (?:monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday)|went|met|visited|moved|bought|decided|"
    r"wants?|deadline)\b|\b\d{4}-\d{2}-\d{2}\b|我|我们|用户|昨天|今天|明天|上周|下周|刚才|去了"
)

# Dialogue gate.
QUESTION_START = re.compile(
    r"^(who|what|when|where|why|how|which|whose|can|could|would|will|shall|should|do|does|"
    r"did|is|are|was|were|have|has|may|am)\b",
    re.IGNORECASE,
)
QUESTION_ZH = re.compile(r"(吗|呢|么)$|什么|怎么|为什么|哪里|哪个|是否|能不能|可不可以")
CHATTER = re.compile(
    r"^(hi|hello|hey|thanks|thank you|thx|ok|okay|sure|great|cool|nice|got it|sounds good|"
    r"you're welcome|no problem|bye|goodbye|good (?:morning|night|evening|afternoon)|yes|no|"
    r"yep|nope|of course|absolutely|let me know|happy to help|i can help|here is|here's|"
    r"glad to|i'd be happy|feel free|hope this helps|is there anything)\b|"
    r"^(你好|谢谢|好的|嗯|没问题|再见|不客气|当然|可以的|收到)",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*|\n+|(?<=[;；])\s*")

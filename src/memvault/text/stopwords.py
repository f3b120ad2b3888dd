"""Stopword lists for BM25 tokens: words so common they only add noise to sparse vectors."""

from __future__ import annotations

_ENGLISH = """
a about above after again against all am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't
doing don't down during each few for from further had hadn't has hasn't have haven't having
he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've
if in into is isn't it it's its itself just let's me more most mustn't my myself no nor not
of off on once only or other ought our ours ourselves out over own same shan't she she'd
she'll she's should shouldn't so some such than that that's the their theirs them themselves
then there there's these they they'd they'll they're they've this those through to too under
until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
where's which while who who's whom why why's will with won't would wouldn't you you'd you'll
you're you've your yours yourself yourselves
"""

_CHINESE = """
的 地 得 了 着 过 是 在 和 与 及 跟 同 或 或者 而 而且 并 并且 就 都 也 还 又 再 才 只 很 太 更 最
吗 呢 吧 啊 呀 哦 嗯 哈 啦 嘛 么 之 其 此 这 那 这个 那个 这些 那些 这样 那样 这里 那里 这儿 那儿
我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 大家 谁 什么 怎么 怎样 为什么 哪 哪里 哪个
一个 一些 一种 一下 有 没 没有 不 把 被 让 给 对 对于 从 向 往 到 于 以 为 为了 因为 所以 但 但是
如果 虽然 然后 可以 可能 会 能 要 想 将 已 已经 曾 曾经 正在 个 些 等 等等 之后 之前 以后 以前
上 下 中 里 即 便 且 则 若 乃 所 该 每 各 某 几 多 少 好 还是 就是 只是 不是 也是 都是
"""

ENGLISH_STOPWORDS: frozenset[str] = frozenset(_ENGLISH.split())
"""The classic English list (Snowball/NLTK family), contractions included."""

CHINESE_STOPWORDS: frozenset[str] = frozenset(_CHINESE.split())
"""Chinese function words, pronouns and particles (punctuation never reaches this list)."""

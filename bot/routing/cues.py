"""Domain cue words for the intent classifier, over normalised text (lower case, digits as 0): English and Chinese
here, Spanish, Portuguese, French and German and the cues of what a message asks for in bot/routing/lexicon.py.

They are features, not rules: the model learns how much each cue, and each pair of cues, counts for each route.
With a few hundred examples, character n-grams alone cannot know that 宕机 and "crash-looping" are the same kind of
word; a cue says so once. Chosen by cross-validation on the train split only (see training.TrainOptions). The fifth to
eighth editions' words (`FIFTH`, `SIXTH`, `SEVENTH`, `EIGHTH`) live here, beside the scope of a negation, which reads a
declined text as such.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence

from bot.routing.lexicon import ASKED, FOURTH, MORE, STATED, THIRD, WIDER

LEXICON = 8  # what a model trained now reads (an artifact records its own); edition 3 alone showed no net gain by
# leave-one-writer-out; the fourth is adopted, the fifth with six outside writers, the sixth with eight, the seventh
# with sixteen, the eighth with twenty (training.py)

_PATTERNS: dict[str, str] = {
    # a state that changed for the worse (metric names alone are not symptoms: "latency" is also a lookup)
    "symptom": r"\b(slow\w*|spik\w*|surg\w*|degrad\w*|outage|down|broken?|fail\w*|crash\w*|oom\w*|time ?outs?|"
    r"timing out|timed out|erroring|throwing|went up|jump\w*|regress\w*|hang\w*|stuck|restarting|flapp\w*|"
    r"leak\w*|unreachable|unavailable|refused|stall\w*|on fire|dropp\w*|declined|rejected|backing up|"
    r"pinned|maxed|doubled|halved|climbing|creeping|burning|tanked|breached|flaky|sluggish|forever|"
    r"wrong|weird|off|crazy|complain\w*|can'?t|cannot|unable|not working|logged out|blank|delayed|"
    r"elevated|huge|lots of|so many|keeps?|spiking|growing|lag\w*|laggy|sluggish|crawl\w*|flak\w*|"
    r"janky|choppy|hiccup\w*|glitch\w*|acting up|misbehav\w*|hosed|borked|busted|tank\w*|dying|dead|"
    r"intermittent\w*|on and off|spotty|erratic|not loading|won'?t load|spinning|late|dipped|dip|"
    r"0xx|0xxs|000s|4xx|oom\w*|crashloop\w*|resets?|all over the place|went from|unusual|anomal\w*|"
    r"restart\w* every|problems?|issues?|wrong with|stopped \w+ing|stale|evict\w*|bounc\w*|piling up|"
    r"pile\w* up|exploding|exploded|through the roof|fell off|never arrive\w*|instead of|0{3}s|"
    r"exhaust\w*|saturat\w*|filling up|thrash\w*|starv\w*|double-?charg\w*|lost|missing|empty)\b|"
    r"\bfrom 0\S* to 0|"
    r"飙|慢|卡|故障|异常|报错|超时|挂|宕机|激增|暴涨|上涨|升高|涨了|抖动|失败|不可用|崩溃|泄漏|积压|打满|拒绝|"
    r"降级|不对|坏|出问题|退化|变差|掉到|掉了|暴跌|翻倍|减半|尖刺|全红|投诉|不了|没法|无法|白屏|登出|"
    r"不发|一直|忽高忽低|不稳定|大量|很多|好多|死锁|抱怨|"
    r"抽风|不正常|不稳|时好时坏|忽快忽慢|发不出|加载不出|打不开|掉线|丢了|丢失|转圈|对不上|变慢|变多|"
    r"偶发|偶尔|不时|时不时|巨慢|很慢|好慢|太慢|卡住|卡死|卡顿|重置|空白|没结果|晚了|出什么事|出事|"
    r"丢包|漏单|掉单|丢消息|排队|堆积|掉没|没更新|没到账|不到账|暴增|拖垮|拖慢|雪崩|假死|夯住|起不来|"
    r"连不上|跑满|满了|耗尽|驱逐|踢下线|被踢|重复扣|没响应|无响应|返回空|用不了|发不出|对不上|一堆|"
    r"才到|退信|爆了|狂吃|"
    r"从.{0,12}(涨|升|掉|降|变)到|重启一次",
    "why": r"\bwhy|how come|为什么|为啥|怎么回事|咋回事|怎么了|怎么就|怎么一直|怎么老|怎么这么|怎么那么|咋这么|咋",
    "cause": r"\b(cause[sd]?|causing|root|rca|related|because|trigger\w*|post-?mortem|retro|timeline|bottleneck|"
    r"what happened|what went wrong|what changed|what's behind|break (anything|something)|broke|killing|"
    r"behind|coming from|explain why|under attack|what'?s going on|what is (going on|happening)|"
    r"was it|is it (the|my|our|that|this)|culprit|responsible|to blame|fault|due to|because of|caused by|"
    r"coincidence|connected|linked|line up|correlat\w*|introduced?|break|breaks|breaking|"
    r"mess(ed)? up|screw(ed)? up)\b|"
    r"什么情况|根因|原因|导致|引起|有关|复盘|搞坏|弄坏|搞挂|发生了什么|"
    r"是不是|从哪来|时间线|有没有(出问题|搞坏|坏掉)|"
    r"造成|搞的|弄的|的锅|怪|元凶|罪魁|有关系|关系吗|对得上|有问题吗|有没有问题",
    "investigate": r"\b(investigate|look (into|at)|take a look|have a look|debug|troubleshoot|check|dig|diagnose|"
    r"figure out|find out|sanity|confirm|make sure|verify|see what'?s|healthy|go (fine|ok|well))\b|"
    r"排查|诊断|定位|分析|看看|是否正常|正常吗|健康吗|"
    r"看下|看一下|查查|检查|确认|帮忙查|帮我查",
    "change": r"\b(deploy\w*|release\w*|rollout|rolled out|upgrade\w*|migration|config (change|push)|shipped)\b|"
    r"发布|上线|升级|迁移|变更|改动|切换",
    "after_change": r"\b(after|since|following|post)\b[^.?!]{0,30}\b(deploy\w*|release\w*|rollout|upgrade\w*|push|"
    r"change|migration|canary|build|version|hotfix)|(发布|上线|升级|变更|改动|发版|迁移|推送)(之后|以后|后)",
    "would_help": r"\b(would|will|does|do|should|could|is)\b(?:[^.?!]|\.(?=\d)){0,40}\b(fix|help|solve|resolve|"
    r"make .{0,20} go away|need to|worth|safe to)\b|before i (roll|restart|scale)|"
    r"能解决|有用吗|有没有用|管用|能让.{0,20}吗|(需要|要不要|该不该|是否要)(回滚|重启|扩容)|之前.{0,10}确认",
    "value": r"\b(what('s| is| was| are)|how (many|much|high)|current\w*|now|show|list|count|give me|which|when|"
    r"number of|atm|right now|"
    r"who deployed|latest|last|tell me the|rn)\b|多少|几|当前|现在|查一下|看一下|列出|统计|哪些|什么时候|数量|"
    r"哪个|最新|最近|给我看",
    "metric": r"\b(p0+|qps|rps|latency|error rate|error ratio|cpu|memory|throughput|restarts?|version|traffic|"
    r"replicas?|pods?|apdex|success rate|lag|connections?|sessions?|0xx|errors?)\b|延迟|错误率|内存|吞吐|"
    r"流量|版本|副本|成功率|积压|连接|会话|错误数|报错数",
    "logs": r"\b(logs?|log lines|grep|lines|messages?|exceptions?|trace id)\b|日志|报错信息|异常",
    "diff": r"\b(diff|changed? in|change in|commit log|between v)|差异|改了什么|改了啥|改动|提交记录",
    "calc": r"\d\s*[-+*/x^]\s*\d|\b(percent|convert|divided|how far over|per day|per month)\b|%|除以|等于|合多少|"
    r"是多少秒|百分之|次方|每个月|一天是",
    "act": r"^(please |pls |can you |could you |now |go ahead and |just |go |let'?s )?"
    r"(roll ?back|roll it back|revert|undo|restart|bounce|kill|recycle|reboot|"
    r"scale|increase|lower|add|set|bump|drain|failover|flush|purge|page|wake|escalate|call|notify|open|"
    r"create|file|assign|silence|mute|ack the|disable|enable|deploy|rerun|merge|turn (on|off)|block|delete|"
    r"run|cordon|fail ?over|switch over)\b|"
    r"^(请|麻烦|帮忙|帮我|马上|赶紧|立刻|直接|去)?\s*(回滚|回退|撤回|撤销|重启|杀掉|扩容|缩容|静默|屏蔽|呼一下|打电话|叫醒|"
    r"升级给|通知(?!服务|邮件|一下)|建个|建一个|开一个|提个|发布(?!后|和|之后|以后)|刷新|清一下|切一下|重新跑|跑一下|打开|关闭|封掉|删掉|合了)|"
    r"^(请|麻烦|帮忙|帮我|马上|赶紧)?\s*(把|给)[^，,。?？]{1,30}(回滚|回退|扩|缩|改成|改回|调到|设为|切|清|加|"
    r"发到|静默|屏蔽|建|开一个|开个|提|杀|删|撤|封|全部|重启|呼|叫)|(马上|赶紧|立刻|现在就)(回滚|重启|呼)|"
    r"(先|暂时)(静默|屏蔽)|^(给|帮)[^，,。?？]{1,20}(开个|开一个|建个|提个)",
    "greeting": r"^(hi|hello|hey|yo|hiya|howdy|morning|good (morning|afternoon|evening|night)|gm|sup|evening)\b|"
    r"^(你好|您好|嗨|哈喽|早|晚安|晚上好|下午好|在吗|在不在|大家|有人在)",
    "thanks": r"\b(thanks?|thx|ty|cheers|appreciated?|great|nice|awesome|perfect|good bot|well done|love it|"
    r"useful|helpful)\b|谢|辛苦|感谢|棒|漂亮|牛|厉害|好用|很有帮助",
    "ack": r"^(ack|ok|okay|got it|gotcha|roger|noted|on it|will do|sounds good|k|cool|sure|fine|lgtm|\+0|agreed|"
    r"brb|yep|yes|no|nope|alright|i'?ll)\b|^(好的|好嘞|收到|了解|明白|嗯|行|知道了|好|没问题|稍等|马上回来|同意|"
    r"是的|不是|对|我来|我自己)",
    # an announcement ("fyi", "heads up", "同步一下"): said of a fixed problem and of a live one alike
    "fyi": r"\b(fyi|heads up|status update|update:|just so you know|^update|update (on|from))\b|"
    r"同步|通知一下|提醒|更新:|进展",
    # the problem is over (or never was): what makes an announcement small talk rather than a symptom report
    "resolved": r"\b(resolved|mitigated|false (alarm|positive)|never ?mind|all good|closed|finished|done|i rolled back|"
    r"we'?re good|back to (normal|baseline)|recovered|gone|all green|ignore|fine now|"
    r"looks? (fine|healthy|good)|closing( the)? incident|back (under|below|to)|stopped after)\b|"
    r"全绿|事故关闭|关掉了|没事了|看着正常|"
    r"已经正常|已恢复|止血|恢复了|好了|没了|忽略|已经恢复|已解决|停了|关闭|误报|算了|正常了|已经解决|已经把|"
    r"已关闭|已经完成|完成了",
    "help": r"\b(help|^usage|commands?|manual|examples?|how (do|can|should) i|what can you|what should i|"
    r"your (commands|tools|answers)|how does opsbot|what is opsbot|what are you|who are you|do you (have|"
    r"support|need|speak|understand|keep)|can you (also|read|investigate services)|how long does|"
    r"connected to|hooked up|integrat\w*|just the (value|number)|limit on|are you able|"
    r"(speak|speaks|understand|understands|read|reads) (chinese|english|mandarin))\b|👍|👎|"
    r"听得懂|懂中文|懂英文|接入|连了哪些|对接|次数限制|怎么让你|怎么在你|拉到|查错|帮助|怎么用|你能|你会|你是|"
    r"你有|使用|命令|例子|怎么看|怎么跟你|怎么问|怎么反馈|怎么发起|怎么重新|支持|opsbot|用法|功能|可以用",
    "concept": r"\b(what is an?|what's an?|what is the difference|difference|explain|how does|how do you compute|"
    r"better|mean|stand for|good default|in general|what does|why (do|would) (we|anyone)|why use|"
    r"what is (p0+|observability|kafka|error budget)|better to|instead of|always|people say|usually|"
    r"typically|generally|why (do|does|would|should) (people|teams|folks|anyone|one|most|\w+ services))\b|"
    r"通常|一般来说|"
    r"什么是|区别|解释|是什么意思|是干什么的|"
    r"怎么工作|哪个好|一般|怎么算|是什么的|为什么用|为什么要|为什么我们|为什么按|合适|而不是|大家都说|总是",
    "bot": r"\b(you|your|bot|opsbot)\b|你",
    # the bot's own features and surfaces: a question about them is help, not small talk
    "feature": r"\b(answers?|trace( id)?|steps?|button|re-?run|partial|unverified|emoji|reactions?|thread|dms?|"
    r"slash|syntax|docs|documentation|configure|staging|language|phrase|limits?|how far back|"
    r"how long|know about|read|access|data sources?|sent anywhere|maintains?)\b|"
    r"回答|步骤|按钮|重新运行|部分|"
    r"表情|线程|私聊|格式|文档|配置|预发|语言|往前查|多久|认识哪些|从 ?git|读的|发到外面|维护|@ ?你|描述|"
    r"听懂|指标",
    "question": r"[?？吗呢]",
    # a change asked for anywhere in the message, not only as its first word ("seckill-svc 扩容到 50 个 pod",
    # "promote the canary"); last, so the older cues keep their pair names
    "request_change": r"\b(flip|promote|fail \S+( \S+)? over|clear the|escalate|pause|ping @\S+|trigger a re-?run)\b|"
    r"(扩容|缩容|扩|缩|调|加|改)到 ?0|(开|建|提)个(工单|jira|单)|(page|呼|叫|通知)一下|打电话给|"
    r"拉个(电话会|会|群)|暂停|停掉|重跑|重新部署|切回|发版|发到(生产|线上|prod)|"
    r"(把|给)[^，,。?？]{1,30}(打开|关掉|关了|停掉|停了|合了|合到|恢复)|"
    # Chinese change verbs where they stand mid-message ("将 X 的告警静音两个钟", "通知值班 DBA")
    r"(静默|静音|屏蔽)[^，,。?？]{0,8}(0|一|两|二|三|半|几)?个?(小时|钟|分钟|天|到)|删除|删掉|驱逐一下|"
    r"切换到|切到备|重新执行|重新跑|(部署|发布|发)[^，,。?？]{0,30}到(生产|线上|prod)|"
    r"提交[^，,。?？]{0,6}(变更单|工单)|开(张|个|一个|一张)[^，,。?？]{0,8}(单|工单|jira|ticket)|"
    r"通知[^，,。?？]{0,10}(组长|值班|指挥官|负责人|dba|on-?call)|升级(成|到) ?(sev|p0)|"
    r"(关掉|关闭|打开)[^，,。?？]{0,20}(开关|flag)|(开关|flag)[^，,。?？]{0,6}(关掉|关闭|打开)",
    # an action the writer already took, reported ("scaled X to 12 pods, watching", "已回滚到 2.18.3"): an FYI,
    # never a request and no symptom, however many change words it holds
    "done": r"^(fyi,? |fyi: |ok,? |so |just |we |i )?(scaled|restarted|rolled back|reverted|bumped|drained|merged|"
    r"redeployed|silenced|muted|failed over|bounced|killed|downgraded|flipped|disabled|purged)\b|"
    r"\b(watching|monitoring|keeping an eye|will monitor|we are monitoring)\b|"
    # "已经重启十几次了" is a count of restarts, a symptom
    r"已经?(扩容|缩容|回滚|重启|合|部署|发布|切|静默|关|降级|rollback)(?! ?[一两二三四五六七八九十几0]+ ?次)|"
    r"观察中|持续观察|在观察|"
    r"(回滚|重启|扩容|缩容|rollback|restart|deploy|merge) ?(了|完|咗)(?!几|多少)",
    # a change asked for politely anywhere in the message ("can you restart X?", "可以帮我重启 X 吗", "I would like to
    # request you to failover ..."): the act cue reads only a first word
    "ask_act": r"\b((can|could|would|will) (you|someone|somebody|u)|please|pls|plz|kindly|request you to|"
    r"like you to|need you to)( please| pls| kindly| just)?( do the needful and)? (roll ?back|revert|"
    r"restart|bounce|scale|bump|drain|fail ?over|purge|page|wake|escalate|open|create|file|silence|mute|"
    r"deploy|rerun|re-run|merge|turn (on|off)|kill|increase|ack|flip|invite|reboot|cordon)\b|"
    r"(帮我|帮忙|帮手|麻烦|请|唔该|可以|可唔可以)[^，,。?？]{0,8}?(回滚|回退|重启|restart|scale|扩容|缩容|revert|"
    r"开一张|开张|开个|开返|call|呼|叫醒|调到|调成|切到|切去|merge|合了|发一下|drain|关掉|kill|静默|摘流)",
    # a value the writer observed, stated with its unit ("p99 is 9s", "4,312 today", "平时 2w，现在 8w", "重启十几次"):
    # a lookup asks for a value, a symptom report states one
    "measured": r"(?<![\w.:/-])0+(?:[.,]0+)*\s?(?:ms|s|secs?|seconds|%|x|k|w|gb|mb|times|req/s|rps|qps)(?![\w])|"
    r"(?<![\w.:/-])0+(?:[.,]0+)*\s?(?:秒|毫秒|倍|万|千|次|条)|"
    r"(?:两|[二三四五六七八九十百千][一两二三四五六七八九十百千万几]*|一[十百千万][一二三四五六七八九十百千万几]*)"
    r"(?:秒|倍|次|条)",
    # the value set against what is normal ("usually under 50", "平时 2w", "vs yesterday"): an anomaly, not a reading
    "baseline": r"\b(usually|normally|normal is|on average|baseline|vs\.?|versus|compared (to|with)|than (usual|normal|"
    r"yesterday|last week|before)|used to (be|take)|typically (under|below|around|about|0))\b|"
    r"平时|平常|往常|正常(是|情况|值|水平|只有)|以往|之前(都|只|是|才)|比平时|比昨天|比上周|同比|环比|"
    r"一般(是|在|只有|才|都)",
    # a named service, host or cluster ("coin-wallet", "gift-svc", "订单服务"): a question about our systems, not about
    # a technology in general
    "entity": r"(?<![\w/.-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w/.-])|\b\w+(svc|service|api|cluster)\b|服务|集群|节点",
    # a specific moment or a recurrence ("overnight", "since 20:00", "again", "昨天", "刚才", "又"): the state of our
    # systems, not a question in general
    "anchor": r"\b(today|tonight|yesterday|overnight|this (morning|afternoon|evening|week)|last (night|week|friday|"
    r"monday|tuesday|wednesday|thursday|saturday|sunday)|since|ago|just now|again|every (hour|day|night|"
    r"minute)|on the hour|0:00|0 ?(am|pm))\b|今天|今晚|今早|昨天|昨晚|凌晨|刚才|刚刚|上周|这周|本周|又|"
    r"每小时|整点|0:00|0 ?点",
}


# The fifth edition, from six outside writers' leave-out errors: the bot's own run stopped or hushed ("halt"), a value
# asked for a text the writer is writing ("for_text": "for the report, when did the first alert fire"), a text asked
# for in a style or for an audience, an incident handled by the writer, a metric back to normal.
FIFTH: dict[str, str] = {
    "halt": r"^(stop|cancel|abort|enough|shut up|be quiet|hush|stopp|annule|arr[êe]te|cancela|cancele)\b|"
    r"^(para|pare)([,.!]|$)|\b(stop|cancel|abort) (that|the|this|your|it|investigating|digging|posting)\b|\bshut up\b|"
    r"\b(para|pare|deja|dej[aá]) de (investigar|analisar|analizar|buscar|procurar|postear|publicar|mandar)|"
    r"\barr[êe]te (de |l'|ça|tout)|\bannule (l'|la |le |ça|tout)|\bh[öo]r auf|\bbrich .{0,30}\bab\b|\babbrechen\b|"
    r"^停|停止(刚才|这个|那个|排查|分析)|别(跑|查|发)了|先别发|取消(刚才|这个|那个)|闭嘴",
    "for_text": r"\bfor (the|my|our|an?) (incident )?(report|post-?mortem|rca|retro|write-?up|timeline|doc|summary)\b|"
    r"\bpara (el|la|o|a|mi|meu|minha) (informe|relat[óo]rio|post-?mortem|reporte|resumen|resumo)\b|"
    r"\bpour (le|la|mon|ma|notre) (rapport|post-?mortem|rex|compte[- ]rendu|r[ée]sum[ée])\b|c'est pour (le|la)\b|"
    r"\bf[üu]r (den|das|die|meinen|unseren|unser) (bericht|report|post-?mortem|protokoll)\b|"
    r"写.{0,10}(报告|复盘|总结).{0,4}要用|(报告|复盘)(里|要用|里要)",
    "write": r"^(pls |please |can you |could you )?(write|draft|summari[sz]e|sum up|compose|put together)\b|"
    r"\b(write|draft|compose) (something|anything|a few|a short|a quick|some)\b|\bsummari[sz]e (what|how|why|"
    r"everything|today|the)\b|\b0 (sentences|bullets|lines|words) max|\bkeep it (short|non-?technical|simple|brief)|"
    r"\bnon-?technical\b|\bno jargon\b|\bsin tecnicismos|\bsem jarg[ãa]o|\bsans jargon|\bohne fachchinesisch|"
    r"不要太技术|通俗(一点|易懂)|写一段|写个|写一份",
    "taken": r"\b(under control|(got|have) it handled|handling it)\b|\b(la|lo) tengo controlad\w*|\btenemos "
    r"controlad\w*|\best[aá] controlad\w*|\bsob controle\b|\bsous contr[ôo]le\b|\bunter kontrolle\b|控制住了|我盯着",
    "resolved": r"\b(normaliz\w*|normalis[ée]\w*|estabiliz\w*|stabilis[ée]\w*|stabilized|back up now)\b|"
    r"恢复正常|稳定了",
    # sarcasm: applause at a failure, the "this is fine" of a burning room
    "vent": r"👏|\bthis is fine\b|\b(totally|perfectly) fine\b",
    # something writing to a disk, in a gerund ("tá escrevendo", "escribiendo"): a process, not a text asked for
    "writes": r"\b(escrevendo|escribiendo|writing (to|on|into))\b|\bschreibt (da|auf|in|so viel)",
}

# The sixth edition, from two more outside writers' errors: German subordinate questions, texting and European
# Portuguese ("o q se passa"), a leak, a symptom since a change, panic, an escalation, a relayed report, more irony.
SIXTH: dict[str, str] = {
    "why": r"\bporqu[êe]\b|\bwas (da |hier |denn )?(los|passiert) ist|\bworan (es|das) liegt|"
    r"\bo q(ue)? (se passa|aconteceu|houve)|\bq (se passa|pasa|pas[oó])\b|\b(pq|xq|x q) (est[aá]|t[aá]|no|n[ãa]o)\b",
    "symptom": r"\bem baixo\b|\bn[ãa]o consegu\w*|\bno (pued\w*|puede|consig\w*)|\bne (peu|peuv)\w* (pas|plus)|"
    r"\bk[öo]nn(en|t)? nicht|\bgrimp\w*|\bfuite|\bfuga de|\bvazamento|\bspeicherleck|\bsobe\b|\bsubindo\b",
    "investigate": r"\bv[eê] (o q|l[aá] o)\b|\b(kannst|k[öo]nntest) du .{0,30}(schauen|nachsehen|pr[üu]fen|gucken)",
    "since_change": r"\b(since|after) (the |yesterday'?s |last night'?s |today'?s |this morning'?s )?(deploy|release|"
    r"rollout|update|upgrade|push)|\bseit (dem|der) (deploy|update|release|rollout|aktualisierung)|\bdesde (o|el|la|a) "
    r"(deploy|despliegue|release|atualiza|actualiza|subida)|\bdepuis (le|la) (d[ée]ploi|mise)|(上线|发布|部署)(以)?后",
    "what_changed": r"\bwhat (has |'s )?changed|\bwas hat sich .{0,20}ge[äa]ndert|\bo que (é que )?mudou|"
    r"\bqu[ée] (ha )?cambi[oó]|\bqu'est-ce qui a chang[ée]|改了什么|变了什么|动了什么",
    "panic": r"\b(help|hilfe|socorro|ayuda|aide|au secours)\s*!|!!|\?\?|😱|😭|🆘|\b(urgent\w*|dringend|asap)\b|"
    r"\bdon'?t know where to start|\bwei[ßs] nicht,? wo ich anfangen|\bno s[eé] por d[oó]nde|"
    r"\bn[ãa]o sei por onde|救命",
    "taken": r"(^|[.!;] )(calling|phoning|ringing) [a-z]+(,|\.| now\b)|\bi'?m (calling|phoning)\b|"
    r"\bi (called|rang) [a-z]+|\bjoining the bridge|\b(ya )?le marqu[ée]|\bich ruf\w*|\bj'appelle|"
    r"\bliguei (pro|pra|para)|打给|打电话给|已经叫了",
    "writes": r"\bme (escrib\w*|escrev\w*)|\bm'[ée]cri\w*|\bschreibt mir|\b(customer|client|user)s? (wrote|writes|"
    r"emailed|says)|\buna clienta?\b|\bum cliente\b",
    "act": r"^ack(nowledge)? (inc|incident|ticket|case|#)\S*",  # an incident acknowledged through the bot
    "value": r"\bon or off\b|\bor the \S+ one\b|\b(an|ein) oder aus\b|开还是关|是开着还是",
    "vent": r"😏|🙃|😒|\bwhat could go wrong|\bqu[ée] (podr[ií]a|pode) (salir|dar) mal|能出什么事",
    "for_text": r"\b(pro|pra) (o )?(relat[óo]rio|informe|reporte|post-?mortem|resumo)\b",
}
# The seventh edition, from four more outside writers' leave-out errors: a given text reshaped (shortened, translated,
# reworded, made casual) or an apology to write, an investigation called off or declined as "nothing to investigate",
# a page or a rollback asked for after a pasted alert, a ticket opened in a tracker, an announcement made in passing.
SEVENTH: dict[str, str] = {
    "write": r"\b(shorten|condense|rephrase|reword|paraphrase|translate|proofread|tone down)\b|"
    r"\bmake (this|it|that) (shorter|less \w+|more (casual|human|friendly|readable|polite|formal))\b|"
    r"\b(one|two|three|0)[- ]?(line|sentence)s? (update|summary|version|message|note)\b|\bi can paste\b|"
    r"\bapolog\w* (mail|e-?mail|letter|note|message)\b|"
    r"\b(acort\w*|ac[oó]rtalo|abrevi[ae]\w*|reformul\w*|traduc\w*|traduz\w*|reescrib\w*|reescrev\w*|encurt\w*|"
    r"raccourci\w*|tradui\w*|r[ée][ée]cri\w*|[üu]bersetz\w*|umformulier\w*)\b|"
    r"\b(hazlo|d[eé]jalo|deixa|deixe|rends-le|mach es) .{0,30}m[aá]is (curt|formal|simples|leve)|"
    r"\bm[aá]s (corto|breve|formal|sencillo)\b|\bplus (court|courte|simple|formel|formelle)\b|"
    r"\b(mail|e-?mail|lettre|carta|correo) d[e'] ?(excuses|disculpas|desculpas)\b|"
    r"\bkürz(e|t)? (das|den|die|es|mal|bitte)\b|\bkürzer\b|\bgekürzt\b|\bentschuldigungs(mail|schreiben)\b|"
    r"压缩成|缩短|精简|翻译|改写|改得|润色|口语化|对外版本|换个说法|缩成|道歉(邮件|信)",
    "no_dig": r"\bnothing (to|for you to|left to) (investigate|dig|look into|analy[sz]e)\b|"
    r"\bno (need|reason) to (investigate|dig|look into)\b|\bno hay (nada )?(que|para) investigar|"
    r"\bnada (que|pra|para|a) investigar|\brien [àa] (investiguer|creuser|chercher|analyser)|"
    r"\bnichts zu (untersuchen|analysieren|suchen)|没什么(要|好|可)(查|排查)的|不用看了",
    "halt": r"\b(cancel|stop|drop|call off|abort) (the|your|this) (investigation|analysis|rca|diagnosis)\b|"
    r"\bcancel\w* (a|la|tu|sua) (investiga\w*|an[aá]lis\w*)|\bpara tudo\b|"
    r"\bannule\w* (l'|ton |la )(enqu[êe]te|analyse|investigation|diagnostic)|"
    r"\b(brich|breche) (die|deine) (analyse|untersuchung) ab|取消(排查|分析|调查)|不用查了"
    r"|\b(mute|silence) yourself\b|\bse cala\b|\bc[aá]llate\b|\btais-toi\b|\bsei (still|ruhig)\b|闭麦|安静(一|点)",
    "act": r"\b(page|wake up|call out) (the |our )?(on-?call|oncall|dba|sre|whoever|someone|somebody)\b|"
    r"\bpage [a-z]+ from\b|\banpiep\w*|\b(alarmier|ruf)\w* (die|den) (rufbereitschaft|bereitschaft)\b|"
    r"\b(open|create|file|raise) (a|an) (jira|ticket|issue|change request)\b|\bon jira\b|\ben jira\b|"
    r"\b(haz|hac[eé]|fais|faz|mach) (un |o |um |einen )?rollback\b|"
    r"\b(restart|reinicia|reinicie|red[ée]marre|starte) (these|those|them|both|esses|estes|esos|estos|ces|die)\b|"
    r"先把[^，,。?？]{1,30}(回滚|回退|重启)|开个单|提个单|建个单|开单",
    "concept": r"\bc[oó]mo funciona\b|\bcomment (marche|fonctionne)\b|\bwie funktionier\w*|"
    r"\bhow (is|are) (a |an )?\w+( \w+)? different\b|\bdiff between\b|区别|有什么不同|怎么工作的|原理",
    "fyi": r"\bs[óo] (avisando|pra avisar|para avisar)\b|\bsolo (aviso|avisando|para avisar)\b|"
    r"\bjust (letting|so) (you|y'?all|everyone|you all) know\b|\bpour info(rmation)?\b|\bpara que sep[aá]n\b|"
    r"\bzur (info|kenntnis)\b|顺便说一下|告知一下",
}
# The eighth edition, from four more outside writers' errors (written on the request boundaries: an investigation
# asked as one fact or a yes/no, a bare symptom, a "whether" question, and detailed lookups and texts): a cause asked
# for after one was ruled out or between two, a cause declined as already known, a loop closed in passing, the moment
# an alert first fired, the jobs or nodes that failed, a text fitted to a few lines or bullets.
EIGHTH: dict[str, str] = {
    "cause": r"\bwhat (is|was) it then\b|\bwhat else (could|can|might) it be\b|\bso it (wasn'?t|isn'?t|was not)\b|"
    r"\bqu[ée] (nos )?falta (ver|revisar|mirar)\b|\bentonces qu[ée] (es|fue)\b|\bent[ãa]o o que [ée]\b|"
    r"\bwas (ist|war) es dann\b|\bc'est quoi alors\b|\bqu'est-ce que c'est alors\b|"
    r"\bpor [\w ]{1,24} o por\b|\bpor [\w ]{1,24} ou por\b|\bbecause of [\w ]{1,24} or\b|"
    r"\bwegen [\w ]{1,24} oder\b|\b[àa] cause (de|du|des) [\w ]{1,24} ou\b|是因为.{1,15}还是|"
    r"原因查出来|(查|找)(一下|下)?(出|到)?原因|查清(楚)?原因|那是什么(问题|原因)|那到底是",
    "no_dig": r"\bdon'?t care why\b|\b(root )?cause('s| is) (already )?(known|clear)\b|"
    r"\bwe (already )?know (why|the cause|what caused)\b|\bnot looking for (a )?causes?\b|"
    r"\bno te pido (un )?an[aá]lisis\b|\bn[ãa]o precisa (cavar|investigar|analisar)\b|"
    r"\bpas besoin (de chercher|d'analyse|de creuser)\b|\b(ohne|keine) ursachen(analyse|suche)\b|"
    r"不用做根因|不(用|需要)(做|搞)?(根因|rca)|原因(我们)?(已经)?知道|已经知道(原因|是)",
    "fyi": r"\bclosing the loop\b|\bnothing for you to do\b|\bjust so everyone knows\b|\bfor awareness\b|"
    r"\bpara (su |vuestro )?conocimiento\b|\bpara conhecimento\b|进展[:：]|^status:|^statut ?:",
    "first_time": r"\bwhen (did )?(this|it|the alert) first (start\w*|fir\w*|trigger\w*)\b|"
    r"\bfirst (started|fired|triggered) firing\b|\bpremi[eè]re fois\b|\bpela primeira vez\b|"
    r"\bpor primera vez\b|\bzum ersten mal\b|第一次.{0,12}(几点|什么时候)|几点.{0,6}第一次",
    "list": r"\bwhich (cron ?jobs|jobs|pods|nodes|services|deploys|alerts) (failed|restarted|are|were|have)\b|"
    r"\bqu[ée] (cron ?jobs|jobs|pods|nodos|servicios) (han|est[aá]n|fallaron)\b|"
    r"\bquels? (jobs|cron ?jobs|pods|n[œo]euds|services) (ont|sont)\b|\bquais (jobs|pods|n[óo]s|servi[çc]os)\b|"
    r"\bwelche (jobs|cronjobs|pods|nodes|knoten) (sind|haben)\b|跑了哪些|哪些(任务|定时任务|节点|服务)(失败|挂|重启)",
    "write": r"\bmake (this|it) fit in\b|\bin (0|one|two|three) (lines|bullets)\b|\b(0|two|three) bullets\b|"
    r"\bbullets for\b|压成|三行以内|两句话|\bdeix[ae] (essa|esta|a) mensagem\b|\brascunh\w*|"
    r"\btransforme (ça|cela|ceci) en\b|\bmach aus [^.]{0,40}(beschreibung|text|mail|nachricht)\b|"
    r"写个工单|工单描述",
}
_NONE: dict[str, str] = {}
_EDITIONS = (
    (MORE, ASKED),
    (WIDER, STATED),
    (THIRD, _NONE),
    (FOURTH, _NONE),
    (FIFTH, _NONE),
    (SIXTH, _NONE),
    (SEVENTH, _NONE),
    (EIGHTH, _NONE),
)


@functools.cache
def compiled_cues(lexicon: int = LEXICON) -> dict[str, re.Pattern[str]]:
    """The cue patterns of a lexicon edition, compiled on the first message (~30 ms). Edition 0: the English and
    Chinese cues alone; from edition n, the n-th table's words (`_EDITIONS`) join the cue of their name and its new
    cues follow (1: other languages, then the request cues; 2: wider words, then the stated cues; 3: venting, status
    notes; 4: FOURTH, and other alerting tools' pages count as alerts; 5: FIFTH, and a declined text reads as such,
    `cues_in`; 6: SIXTH, and negation in Portuguese; 7: SEVENTH; 8: EIGHTH). Each edition only appends: older cues
    keep their pair names."""
    merged = dict(_PATTERNS)
    for joined, added in _EDITIONS[:lexicon]:
        merged = _joined(merged, joined) | added
    return {name: re.compile(pattern) for name, pattern in merged.items()}


def _joined(patterns: dict[str, str], more: dict[str, str]) -> dict[str, str]:
    """`patterns` with each of `more`'s words joined to the cue of its name, and its new cues after them."""
    joined = {
        name: f"(?:{pattern})|(?:{more[name]})" if name in more else pattern for name, pattern in patterns.items()
    }
    return joined | {name: pattern for name, pattern in more.items() if name not in patterns}


# Where a Chinese character meets a Latin letter or a digit: Python's \b sees no boundary there (both are word
# characters), so "gacha-svc的p99" or "全是0xx" would hide their English cues.
_SCRIPT_SEAM = r"(?<=[\u3400-\u9fff])(?=[a-z0-9])|(?<=[a-z0-9])(?=[\u3400-\u9fff])"


@functools.cache
def _script_seam() -> re.Pattern[str]:
    return re.compile(_SCRIPT_SEAM)


def cues_in(norm: str, found_before: Sequence[str] = (), *, lexicon: int = LEXICON) -> list[str]:
    """The cues found in normalised text (after `found_before`, cues found elsewhere, e.g. in the raw text), and every
    pair of them ("why+symptom"): a linear model cannot form the pairs itself, and "what is" + a metric reads
    differently with and without a symptom. Matched with a space where Chinese meets Latin or digits, so English cues
    read inside Chinese text too. From the fifth edition, a request cue negated in its clause reads "not_<cue>"."""
    norm = _script_seam().sub(" ", norm)
    patterns = compiled_cues(lexicon)
    found = [*found_before, *(name for name, pattern in patterns.items() if pattern.search(norm))]
    if lexicon >= 5:
        found = _scoped(norm, found, patterns, _NEGATED if lexicon == 5 else _NEGATED_SIXTH)
    return found + [f"{a}+{b}" for a, b in itertools.combinations(found, 2)]


# A negation before a request word, within its clause: "don't just give me a graph", "keine Zusammenfassung", "不用写"
_NEGATED = re.compile(
    r"(\b(don'?t|do not|not|no|never|without|sin|sem|pas( de)?|ne|nicht|kein\w*|ohne|nada de|no hace falta que|"
    r"n[ãa]o precisa( de)?)\b[^.,;!?:]{0,20}|(不用|不要|别|无需|不需要)[^，,。！？]{0,6})$"
)
_NEGATED_SIXTH = re.compile(f"{_NEGATED.pattern}|\\b(n[ãa]o|nem)\\b[^.,;!?:]{{0,20}}$")  # Portuguese "não quero resumo"
NEGATABLE = ("write", "only")


def _scoped(norm: str, found: list[str], patterns: dict[str, re.Pattern[str]], negated: re.Pattern[str]) -> list[str]:
    """From the fifth edition, a request cue whose every match is negated within its clause reads as "not_<cue>"
    (a text or a single value declined: what is left is the larger request)."""
    out = []
    for name in found:
        hits = list(patterns[name].finditer(norm)) if name in NEGATABLE else []
        declined = bool(hits) and all(negated.search(norm[max(0, m.start() - 40) : m.start()]) for m in hits)
        out.append(f"not_{name}" if declined else name)
    return out

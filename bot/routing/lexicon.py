"""Cue words beyond English and Chinese, and the cues of what a message asks the bot to do.

Two parts, both features of the intent classifier (bot/routing/cues.py merges them; they are never rules):
- `MORE`: Spanish, Portuguese, French and German words for cues that cues.py names in English and Chinese. The
  weights a cue earns on thousands of English and Chinese lines then carry over to a language with a few hundred.
- `ASKED`: what the person wants, apart from what the message is about. An incident word says little about the
  request: "don't investigate, just tell me the error rate" names an incident and asks for one value. So: an
  investigation declined ("no need to dig", "sin investigar", "不用查"), the scope of "just"/"only" ("solo el dato",
  "nur den Wert", "只要"), a writing request (a post-mortem, a status-page update, a summary of the thread), a list,
  and a pasted alert (found in the raw text, before code blocks become the word "code"), firing or resolved.
- The second edition (`WIDER`, `STATED`), written when two more writers showed what the first missed: wider request
  words (a text reshaped or addressed to someone, "yes/no is fine", an investigation waved off, what the bot can see
  listed), and what a message states beside its request: the cause already known or still unknown, one value asked
  about a past window, venting. An artifact records the edition it was trained with (FeatureSpec.lexicon).
- The third edition (`THIRD`): venting and sarcasm beyond English, laughter, status notes to the channel, the bot
  waved off: chat that names an incident and asks for nothing.
- The fourth edition (`FOURTH`), written from four outside writers' lines: an alert the writer has taken, and
  something writing to a disk, as cues of their own; changes, lists, help and on-call questions in more words.
- The fifth edition (bot/routing/cues.py `FIFTH`), from six outside writers' leave-out errors: the bot's run stopped,
  a value asked for a text being written, a text's style or audience, and the scope of a negation ("not_write").
- The sixth edition (bot/routing/cues.py `SIXTH`), from two more outside writers' errors: a symptom since a change,
  "what changed", panic, the writer's own escalation, a relayed report, German and European Portuguese question forms.
- The seventh edition (bot/routing/cues.py `SEVENTH`), from four more outside writers' errors: a given text reshaped
  (shortened, translated, reworded) or an apology to write, an investigation called off or "nothing to investigate",
  a page, a rollback or a tracker ticket asked for after a pasted alert, the bot hushed, how a thing works.

Patterns read normalised text (lower case, NFKC, digit runs as 0); accents are optional where writers drop them.
"""

from __future__ import annotations

MORE: dict[str, str] = {
    "symptom": r"\b(lent[oa]s?|lent[ií]sim\w*|lenteur|langsam\w*|ca[ií]d[oa]s?|se cay[oó]|cay[oó]|ca[ií]u|queda|"
    r"fora do ar|en panne|plant[ée]\w*|tomb[ée]\w*|ausfall\w*|ausgefallen|f[aá]ll\w*|falh\w*|[ée]chou\w*|[ée]chec|"
    r"fehlgeschlagen|schl[äa]gt fehl|travad\w*|trav[aeo]u|bloqu\w*|colgad\w*|h[äa]ngt|h[äa]ngen|atrasad\w*|"
    r"retard\w*|verz[öo]g\w*|disparad\w*|explot\w*|satur\w*|a tope|no (carga\w*|funciona\w*|anda|responde\w*|"
    r"llega\w*|cargan)|n[ãa]o (carrega\w*|funciona\w*|responde\w*|chega\w*|comunica\w*)|(marche|fonctionne|"
    r"r[ée]pond|charge)(nt)? (plus|pas)|geht nicht|funktioniert nicht|nicht erreichbar|kaputt|todo rojo|"
    r"tout rouge|alles rot|rechaz\w*|rejeit\w*|rejet\w*|lehnt|abgelehnt|perd\w*|verlier\w*|verloren|sin se[ñn]al|"
    r"sem sinal|dej[oa]ron de|deixou de|pararon|parou|arr[êe]t[ée]\w*|ne .{0,20} plus|spinnt|brennt|sube|subi[oó]|"
    r"subiu|aument\w*|augment\w*|gestiegen|steigt|dispar[oó]|disparou|extra[ñn]o|estranho|bizarre|komisch|"
    r"seltsam)\b",
    "why": r"\bpor ?qu[ée]|porque [ée] que|por qu[eê]|pourquoi|warum|wieso|weshalb|qu[ée] pasa|qu[ée] pas[oó]|"
    r"qu[ée] onda|o que (aconteceu|se passa|est[aá] (a )?acontecer|houve|foi)|qu'est-ce qui (se passe|s'est pass[ée])|"
    r"que se passe-t-il|ce qui se passe|was ist (da )?(los|passiert)|was passiert|qu[ée] se rompi[oó]|"
    r"c'est quoi le (probl[eè]me|souci)|was ist das problem|cu[aá]l es el problema|qual [ée] o problema",
    "cause": r"\b(causa\w*|caus[ée]\w*|[àa] cause|culpa\w*|ra[ií]z|origine|ursache\w*|schuld|grund|liegt es an|"
    r"wegen|ser[aá] que|ser[aá] el|est-ce que c'est|est-ce le|ist es|war es|fue el|foi o|foi a|c'[ée]tait|"
    r"relacionad\w*|li[ée] [àa]|zusammenhang|provoc\w*|d[ée]clench\w*|ausgel[öo]st)\b",
    "investigate": r"\b(investig\w*|averigu\w*|revis\w*|mir[aá] (si|qu[ée]|que|lo|esto|eso)|fij[aá]te|analiz\w*|"
    r"an[aá]lis\w*|diagnos\w*|v[eê] (isso|o que|se)|verific\w*|v[ée]rifi\w*|olha|checa|chequea|comprob\w*|"
    r"comprueb\w*|regarde\w*|enqu[êe]t\w*|creus\w*|analys\w*|untersuch\w*|pr[üu]f\w*|schau\w*|analysier\w*|"
    r"nachsehen|guck\w*|confirm\w*|best[äa]tig\w*|descubr\w*|descobr\w*|d[ée]couvr\w*|herausfinden|"
    r"trouv\w* (pourquoi|la cause|ce qui)|encontr\w* (la causa|a causa|o que|lo que))\b",
    "change": r"\b(despliegue\w*|despleg\w*|desplegó|deploy\w*|d[ée]ploi\w*|d[ée]ploy\w*|mise en prod|mep|"
    r"livraison|mise [àa] jour|atualiza\w*|actualiza\w*|aktualisier\w*|migraci[oó]n|migra[çc][ãa]o|"
    r"cambio de config\w*|altera[çc]\w*|changement\w*|[äa]nderung\w*|versi[oó]n nueva|nova vers[ãa]o|"
    r"nouvelle version|neue version|ausgerollt|subida|implanta[çc][ãa]o)\b",
    "value": r"\b(cu[aá]nt[oa]s?|cu[aá]l (es|fue|era)|cu[aá]ndo|desde cu[aá]ndo|a qu[ée] hora|quant[oa]s?|"
    r"qual (é|foi|era|o|a)|quando|desde quando|a que horas|combien|quel(le)?s? (est|était|a|version)|quand|"
    r"depuis quand|[àa] quelle heure|wie ?viele?|wie hoch|wie lange|welche version|wann|seit wann|um wie ?viel uhr|"
    r"actual|atual|actuel\w*|aktuell\w*|ahora|agora|maintenant|jetzt|[úu]ltim[oa]s?|derni[eè]re?s?|letzte\w*|"
    r"dame|d[aá]me|pasame|p[aá]same|mu[ée]strame|mostrame|me passa|me mostra|mostra|montre\w*|zeig\w*|gib mir|"
    r"dis-moi|dime|decime|me diz|me fala|sag mir|pico|pic|spitze|m[aá]xim[oa]|maximum|m[aá]x|durou|dur[oó]|"
    r"a dur[ée]|gedauert|hubo|houve|y a-t-il eu|gab es)\b",
    "metric": r"\b(latencia|lat[êe]ncia|latence|latenz|tasa de error\w*|taxa de erro\w*|taux d'erreur\w*|"
    r"fehlerrate|memoria|mem[óo]ria|m[ée]moire|speicher|r[ée]plicas?|r[ée]pliques?|versi[oó]n|vers[ãa]o|tr[aá]fico|"
    r"tr[aá]fego|trafic|verkehr|conexi\w*|conex[õo]es|connexions?|verbindungen|disco|disque|cola|fila|"
    r"warteschlange|errores|erros|erreurs|fehler|uso de cpu|carga)\b",
    "act": r"^(por favor |porfa |bitte |stp |svp |s'il te pla[iî]t |vite |r[aá]pido |schnell )?"
    r"(reinici\w*|red[ée]marr\w*|relanc\w*|neu ?start\w*|starte|rollback|haz (un )?rollback|fais (un )?rollback|"
    r"faz (o |um )?rollback|revert\w*|revier\w*|escal[ae] |skalier\w*|silenci\w*|mets (en silence|en sourdine)|"
    r"stumm\w*|mute|page[ae]? |pag |llam[ae] |liga (pro|para)|appelle |ruf |abr[ei] (un|um) ticket|"
    r"ouvre (un )?ticket|cr[ée]e (un )?ticket|mach (ein )?ticket|desactiv\w*|desativ\w*|d[ée]sactiv\w*|"
    r"deaktivier\w*|borra |apaga |supprime |l[öo]sch\w*|drena |purga |vac[ií]a |passe .{0,30} [àa] 0)",
    "ask_act": r"\b(puedes|pod[ée]s|podr[ií]as|pode|podes|poderia|peux-tu|tu peux|pourrais-tu|kannst du|"
    r"k[öo]nntest du|k[öo]nnen sie)( por favor| porfa| stp| bitte)? (reinici\w*|red[ée]marr\w*|neu ?start\w*|"
    r"rollback|revert\w*|escal\w*|silenci\w*|mettre en silence|stummschalt\w*|pag\w*|llamar|ligar|appeler|"
    r"anrufen|abrir un ticket|ouvrir un ticket|ein ticket)",
    "request_change": r"\b(silenci[ae]\w*|mets .{0,30}(en silence|en sourdine)|stummschalt\w*|"
    r"silence (this|the|it|that)|mute (this|the|it)|chama (o|a) (plant[ãa]o|on-?call)|"
    r"llam[aá] (a|al) (la )?(guardia|on-?call)|appelle l'astreinte|"
    r"(abre|abrir) (un|um) (incidente|ticket|chamado)|ouvre (un|une) (incident|ticket)|[öo]ffne (ein|einen) "
    r"(incident|ticket)|pag(ea|ue|en|e) (a|al|o|the|den|die)|rollback (de|do|du|von|of)|reinicia (los|las|o|os)|"
    r"red[ée]marre (les|le|la)|starte .{0,30} neu)\b",
    "greeting": r"^(hola|buenas|buen d[ií]a|buenos d[ií]as|ol[aá]|oi|bom dia|boa tarde|boa noite|bonjour|salut|"
    r"coucou|bonsoir|hallo|moin|servus|guten (morgen|tag|abend)|gr[üu](ß|ss) ?(dich|gott|euch)?)\b",
    "thanks": r"\b(gracias|obrigad\w*|valeu|merci|danke|vielen dank|genial|excelente|buen trabajo|bom trabalho|"
    r"bravo|bien jou[ée]|parfait|perfecto|perfeito|prima|klasse|super|top)\b",
    "ack": r"^(vale|dale|listo|entendido|visto|de acuerdo|certo|beleza|blz|entendi|combinado|d'accord|"
    r"[çc]a marche|compris|vu|not[ée]|bien re[çc]u|alles klar|verstanden|passt|jawohl|claro|perfecto)\b",
    "resolved": r"\b(resuelto|resolvido|r[ée]solu|gel[öo]st|se recuper[oó]|recuperou|voltou|volvi[oó]|reparti|"
    r"r[ée]tabli|wieder (da|ok|normal|gr[üu]n)|l[äa]uft wieder|cierro el incidente|je (clos|ferme)|fecho o incidente|"
    r"erledigt|ya est[aá]|j[aá] est[aá]|solucionad\w*|normalizad\w*|falsa alarma|falso alarme|fausse alerte|"
    r"fehlalarm|incident (clos|ferm[ée])|incidente cerrado|incidente fechado)\b",
    "fyi": r"\b(para (su|tu) info\w*|pra (sua )?informa[çc][ãa]o|pour info|zur info|nur zur info|aviso|"
    r"aten[çc][ãa]o|hinweis|pour m[ée]moire)\b",
    "help": r"\b(qu[ée] (puedes|sabes) hacer|o que (voc[êe]|tu) (consegue|pode|sabe)s? fazer|tu sais faire quoi|"
    r"que sais-tu faire|qu'est-ce que tu (peux|sais)|was kannst du|wie (frage|frag|sag|bitte) ich dich|"
    r"c[oó]mo te pido|como ([ée] que )?(eu )?(te )?pe[çc]o|comment je te demande|wie (sag|frag) ich dir|tienes acceso|"
    r"tens acesso|tem acesso|"
    r"as-tu acc[èe]s|t'as acc[èe]s|hast du zugriff|haben sie zugriff|(ves|v[êe]s|consegues ver|tu vois|siehst du|"
    r"sehen sie) (los|las|os|as|les|des|die|auch|datos|dados|donn[ée]es|daten)|ayuda|ajuda|aide|hilfe|comandos|"
    r"commandes|befehle|ejemplos|exemplos|exemples|beispiele)\b",
    "concept": r"\b(qu[ée] es (un|una|el|la|lo)|qu[ée] significa|qu[ée] quiere decir|a qu[ée] se refiere|"
    r"o que [ée] (um|uma|o|a)?|o que significa|o que quer dizer|que (veut|veulent) dire|veut dire|c'est quoi (un|une|"
    r"le|la|l')|qu'est-ce (qu'un|qu'une|que)|was ist (ein|eine|der|die|das)|was bedeute\w*|was hei(ß|ss)t|"
    r"bedeute\w*|diferencia|diferen[çc]a|diff[ée]rence|unterschied|expl[ií]c\w*|explica\w*|explique\w*|"
    r"erkl[äa]r\w*|en general|em geral|en g[ée]n[ée]ral|im allgemeinen|concepto|conceito|concept|konzept|eli5|"
    r"qu[ée] mide|o que mede|que mesure|[çc]a mesure quoi|was misst|(mesure|mide|mede|misst) quoi|"
    r"[ée] o qu[êe]|quer dizer o qu[êe]|c'est quoi|was ist eigentlich)\b|what does .{0,40} measure",
    "question": r"[¿]",
    "baseline": r"\b(normalmente|lo normal|o normal|normalement|d'habitude|habituellement|d'ordinaire|"
    r"normalerweise|[üu]blicherweise|usualmente|geralmente|suele|costuma|en temps normal|comparado con|"
    r"comparado com|par rapport [àa]|im vergleich)\b",
    "anchor": r"\b(hoy|ayer|anoche|esta (ma[ñn]ana|noche|tarde)|hoje|ontem|esta (manh[ãa]|noite)|aujourd'hui|hier|"
    r"cette nuit|ce matin|ce soir|heute|gestern|letzte nacht|otra vez|outra vez|de nouveau|encore|schon wieder|"
    r"wieder|desde|depuis|seit|hace (un|una|0)|h[aá] (0|um|uma)|il y a)\b",
}

ASKED: dict[str, str] = {
    # an investigation declined: what follows is a smaller request
    "no_dig": r"\b(don'?t|do not|no need to|not asking (you )?(to|for)|without|no|skip the)( an?| the| any)? "
    r"(investigat\w*|dig\w*|look(ing)? into|analy[sz]\w*|debug\w*|troubleshoot\w*|rca|deep.?dive)\b|"
    r"\bno (investigues|investigar|analices|analizar|busques|lo investigues|me lo investigues|hace falta)\b|"
    r"\bno (necesito|te pido) (que investigues|un an[aá]lisis|an[aá]lisis|que analices)|"
    r"\bsin (investigar|an[aá]lisis|analizar|investigaci[oó]n|analizar nada)\b|"
    r"\bn[ãa]o (precisa|[ée] preciso|quero que|vale a pena)( de)? (investigar|analisar|investiga[çc][ãa]o|an[aá]lise)|"
    r"\bn[ãa]o investig\w*|\bsem (investigar|investiga[çc][ãa]o|an[aá]lise|analisar)|\bnada de investiga\w*|"
    r"\bpas (besoin|la peine) (d'|de )(enqu[êe]t\w*|investig\w*|analys\w*|creuser|chercher)|"
    r"\bn'(investigue|enqu[êe]te|analyse|cherche)\w* pas|\bsans (enqu[êe]te|analyse|investigation|creuser|"
    r"rien creuser)|"
    r"\bne (creuse|cherche) pas|\bnicht (untersuchen|analysieren|nachforschen|suchen)|"
    r"\bkein\w* (analyse|untersuchung|investigat\w*|ursachenanalyse|ursachenforschung)\b|"
    r"\bohne (analyse|untersuchung)|\bmusst (nichts|nicht) (untersuchen|analysieren)|"
    r"不用(查|排查|分析|调查|深究|看原因)|不需要(排查|分析|调查|查原因)|别(查|排查|分析)|无需(排查|分析)|不要(排查|分析)",
    # the scope of "just" / "only": one value, one fact, a yes or a no
    "only": r"\bjust (tell|give|need|want|the|what|how|when|a|one|confirm|curious|wondering|yes|checking if)\b|"
    r"\bonly (need|want|the|asking|care)\b|that'?s all\b|nothing (else|more)\b|yes or no|\by/n\b|"
    r"\bs[oó]lo (el|la|los|las|dime|decime|quiero|necesito|un|una|eso|s[ií]|saber|pregunto|entender)\b|"
    r"\bnada m[aá]s\b|no hace falta m[aá]s|s[ií] o no\b|\bel dato\b|\bel n[uú]mero\b|\b[uú]nicamente\b|"
    r"\bs[óo] (o|a|os|as|me|quero|preciso|um|uma|isso|sim|pra|para|a dura[çc][ãa]o|o valor|o n[uú]mero)\b|"
    r"\bapenas\b|\bsomente\b|mais nada|sim ou n[ãa]o|\bjuste (le|la|les|l'|un|une|dis|savoir|pour|ce|combien|quand|"
    r"la valeur)\b|"
    r"\bseulement\b|\buniquement\b|c'est tout\b|[çc]a suffit|rien d'autre|oui ou non|oui/non|\bun chiffre\b|"
    r"\bnur (die|der|das|den|kurz|wissen|ein|eine|sagen|erkl[äa]r\w*|wann|wie|ob)\b|mehr (brauch|will) ich nicht|"
    r"sonst nichts|ja oder nein|\beine zahl\b|\blediglich\b|只(要|想|需要|问|看|告诉|给|说)|就行|就好|就够|就可以了|"
    r"是或不是|有没有就行",
    # writing or summarising: a text to produce, not a cause to find
    "write": r"\b(write|draft|compose|prepare|summari[sz]e|sum up|rewrite|word)( me| us)? (up )?(the|a|an|up|"
    r"our|this|that|some|it)\b|\bwrite.?up\b|\btl;?dr\b|\brecap\b|"
    r"\b(escrib\w*|redact\w*|red[aá]ct\w*|arm[aá] (el|la|un|una)|h[aá]zme|haz (un|una|el) (resumen|informe|"
    r"mensaje|texto)|resum[eií]\w*|resumen|prepar[aá] (el|la|un|una))\b|"
    r"\b(escrev\w*|redig\w*|red[ia]ge|faz (um|uma|o|a) (resumo|comunicado|relat[óo]rio|texto)|monta (o|a|um)|"
    r"resum\w*|gera (o|a|um))\b|"
    r"\b(r[ée]dig\w*|[ée]cri[ste]\w*|pr[ée]pare (le|la|un|une)|fais(-moi)? (le|la|un|une) (r[ée]sum[ée]|"
    r"rapport|texte|timeline|compte|note|message|rex|post)|r[ée]sum[ée]\w*|compte[- ]rendu)\b|"
    r"\b(schreib\w*|formulier\w*|verfass\w*|entwirf|fass\w* .{0,40}zusammen|zusammenfass\w*)\b|"
    r"\b(need|necesito|preciso|j'ai besoin d'|ich brauche) (a|an|un|una|um|uma|une|eine?n?) (mail|e-?mail|correo|"
    r"mensaje|mensagem|message|text|texto|texte|tweet|tuit|note|nota|comunicado|informe|rapport|bericht)\b|"
    r"\berstell\w* (den|die|das|einen|eine) .{0,30}(report|bericht|mitteilung|mail|post-?mortem)|"
    r"写|起草|拟(一|个|份)|总结(一下)?|整理(一下|成)|汇总一下",
    # what a writing request produces
    "document": r"\b(post-?mortem|after-?action|status ?page|status-page|incident report|announcement|"
    r"customer (comms|email|message|update)|informe|relat[óo]rio|rapport|bericht|comunicado|communiqu[ée]|"
    r"mitteilung|statusseite|p[aá]gina de (estado|status)|page de statut|e-?mail|mail|correo|courriel|sms|tuit|"
    r"tweet|ticket|note|nota|texto|texte|template|plantilla|modelo|vorlage|bullets?|puntos|pontos|points)\b|"
    r"复盘报告|报告|通报|公告|邮件|模板",
    "list": r"\b(list|lista\w*|liste\w*|enumera\w*|aufz[äa]hl\w*|aufliste\w*|all (the )?(services|alerts|dashboards)|"
    r"todos (os|los)|todas (as|las)|tou(te)?s les|alle (services|dienste|alerts|dashboards)|quais|qu[ée] "
    r"(alertas|servicios|dashboards)|quelles? (alertes|services|dashboards)|welche (alerts|services|dashboards|"
    r"dienste))\b|\b(deploys|despliegues|d[ée]ploiements|deployments|implanta[çc][õo]es|alertas|alertes|alerts|"
    r"dashboards|incidentes|incidents) (de|des|der|of|from|in|on|went|hubo|offen\w*|abiert\w*|activ\w*|ativ\w*|"
    r"firing|f[üu]r|para|pour|for)\b|\b(offenen|aktiven|active|open|[úu]ltimos|derniers|letzten) (alerts|alarme|"
    r"deploys|despliegues|d[ée]ploiements|deployments|incidentes)\b|列出|列一下|有哪些|都有什么|哪些服务|哪些告警",
}

# The second edition: more words for the request cues above (each joins its cue as an alternative) ...
WIDER: dict[str, str] = {
    # waved off: nothing for the bot to do ("don't bother looking", "nothing needed from you", "你不用管")
    "no_dig": r"\bdon'?t (bother|re-?investigate|worry)|\b(nothing|no action) (needed|to do|required)|"
    r"\bnothing needed from|\bnada (que|para) hacer|\bnada a fazer|\brien [àa] faire|\bnichts (mehr |zu )?(tun|"
    r"untersuchen)|\bje ne te demande pas de|\bkannst du ignorieren|\bpodes ignorar|\blaisse faire|"
    r"不用(管|处理|查了)|你不用",
    # enough said: the reply asked for is small ("yes/no is fine", "diff summary is enough", "one number")
    "only": r"\byes/no\b|\b(is|are|'s) (enough|fine|all i need)\b|\bone number\b|\bi only need|\bi just need|"
    r"\b(es suficiente|basta con|me basta|[ée] suficiente|basta|suffit|me suffit|reicht|gen[üu]gt)\b|一个数|给个",
    # a text reshaped or addressed to someone ("turn my notes into a post-mortem", "make this sound professional",
    # "handover note", "comms for our agents")
    "write": r"\bturn .{0,30} into\b|\bmake (this|it) (sound |more |look )?(professional|formal|nicer|shorter|"
    r"clearer)|\b(pls|please) draft\b|\bdraft (it|pls|please)\b|\b(handover|hand-?off|shift) notes?\b|\bcomms\b|"
    r"\b(apology|exec(utive)?|management|customer|clinical|incident) (msg|message|e-?mail|summary|note|update|"
    r"comms)\b|\blessons learned\b|\b(jira|ticket) (description|text)\b|\bmanagement-summary|\bkunden(info|"
    r"mitteilung)|\bnota de passagem|\bnote de passation|\bresumen ejecutivo|\br[ée]sum[ée] ex[ée]cutif|"
    r"改正式|正式一点|文案|交班记录|交接记录|致歉信|道歉信|工单描述|初稿|周报",
    # what the bot can see, listed ("which services can you see", "你能看哪些 dashboard")
    "list": r"\b(offene[n]?|aktive[n]?|open) (alerts|alarme|incidents|incidentes)\b|"
    r"\bwhich \w+( \w+)? (can you|do you) see\b|\bque \w+( \w+)? (v[êe]s|ves|vois)\b|能看(到)?哪些|能看到的",
    # what a term means, in the words Chinese writers use for it ("啥意思", "代表什么", Cantonese "系咩")
    "concept": r"啥意思|什么意思|代表什么|代表啥|啥叫|什么叫|系咩|指的是|\bwhat does (it|this|that) (mean|measure)",
}

# ... and what a message states beside its request, as cues of their own
STATED: dict[str, str] = {
    # the cause is already known: a text to write or a value to read, not an investigation ("root cause was an
    # expired cert", "ya sabemos que fue el CDN", "Ursache ist bekannt", "原因已查明")
    "known": r"\b(root )?cause (is|was|were|has been|already) (known|clear|identified|confirmed|fixed|corrected|"
    r"on)\b|\b(root )?cause( was| were| ?:| ?=)|\bknown cause\b|[,;] caused by\b|"
    r"\b(root )?cause (identified|confirmed|found)\b|"
    r"\bwe (already |all )?(know|found|agree) (what|the cause|why|it was|it'?s|that)|\b(was|were|is) caused by\b|"
    r"\b(ya )?sabemos (la causa|que fue|qu[ée] pas[oó]|lo que pas[oó])|\bla causa (fue|es|era|ya|est[aá])\b|"
    r"\bcausa( ra[ií]z)? ?(confirmada|conocida|identificada|conhecida|:|=)|\bcausa ra[ií]z (fue|foi|:)|"
    r"\b(j[aá] )?sabemos (a causa|que foi|o que)|\ba causa (foi|[ée]|j[aá])\b|\bj[aá] sabemos\b|"
    r"\bcause (connue|identifi[ée]e|corrig[ée]e|:|=)|\bla cause (est|[ée]tait|on la conna[iî]t)\b|"
    r"\bon (la )?conna[iî]t (d[ée]j[àa]|la cause)|\bursache (ist |war )?(bekannt|klar)\b|"
    r"\bursache( war| kennen wir| ?:)|\bkennen wir (schon|bereits)|"
    r"原因(已|已经|也)?(查明|确认|清楚|找到|定位|知道)|根因(已|已经)?(定位|确认|找到|查明)|"
    r"(已经?|已)(确认|定位|查明)(是|了)|原因是|揾到原因",
    # the cause is still unknown: an investigation, however the message words it ("cause still unknown",
    # "sigue sin causa", "immer noch ungeklärt", "到现在都不知道原因")
    "unknown": r"\b(cause|root cause) (is )?still unknown|\bunknown cause|\bno (root )?cause\b|\bstill unclear|"
    r"\b(still )?(don'?t|do not|doesn'?t) know (what|why)|\bno idea (what|why)|\b(nobody|no one) (knows|figured)|"
    r"\bsin causa|\bnadie sabe|\bno sabemos|\bsem causa|\bningu[ée]m (sabe|percebeu|achou|explicou)|"
    r"\bn[ãa]o sabemos|\bpas (de|la) cause|\btoujours pas|\baucune id[ée]e|\bpersonne (n'a|ne sait)|\bunklar|"
    r"\bungekl[äa]rt|\bkeine (root cause|ursache)|不知道(原因|为啥|为什么)|(还)?没(有)?找到(原因|根因)|不清楚|没结论|"
    r"(原因|根因)(还|仍然|也)?(不知道|不清楚|不明|未知|没找到)|"
    r"说不清|没人说清",
    # one value asked about a past window ("what was the peak error rate during the outage", "how long was X down",
    # "故障期间错误率峰值是多少"): a lookup framed around an incident, not an investigation of it
    "past_value": r"\bwhat was the (peak|max\w*|total|highest|lowest)\b|\bhow long (was|did|has|were)\b|"
    r"\b(how many|peak|max\w*|total|highest)\b.{0,40}\bduring\b|\bwhat time did\b|"
    r"\bcu[aá]l fue el (pico|m[aá]ximo)|\bcu[aá]nto dur[oó]|\b(cu[aá]nt[oa]s|pico|m[aá]xim[oa])\b.{0,40}\bdurante\b|"
    r"\bqual foi (o|a) (pico|m[aá]xim[oa])|\bquanto tempo durou|\b(quant[oa]s|pico)\b.{0,40}\bdurante\b|"
    r"\bc'[ée]tait quoi le (pic|max)|\bquel (a [ée]t[ée]|[ée]tait) le (pic|max)|\bcombien de temps a dur[ée]|"
    r"\b(combien|pic|max\w*)\b.{0,40}\b(pendant|durant|lors)\b|\bwie lange (hat|ging|war|dauerte)\b|"
    r"\bwie hoch war\b|\b(wie viele|h[öo]chste|maximale)\b.{0,40}\b(w[äa]hrend|beim)\b|"
    r"期间.{0,20}(峰值|最高|最多|一共|多少)|(峰值|一共|总共).{0,10}(是多少|多少|几)|(中断|挂|宕机|停)了多久|持续了多久|"
    r"最多.{0,10}几",
    # venting in the channel: a mood, not a request ("I need a vacation", "j'en peux plus", "想辞职")
    "vent": r"\b(i need|i'?ve forgotten what) (a )?(vacation|holiday|sleep|coffee)|\bi quit\b|\bclassic\b|"
    r"\bof course\b|\bgo figure\b|\blove how\b|\bi swear\b|\bfml\b|\bno puedo m[aá]s|\bqu[ée] casualidad|"
    r"\bc[oó]mo no\b|\bj'en peux (plus|pu)|\bje vais craquer|\b[ée]videmment\b|\bnuit blanche|"
    r"\bn[ãa]o aguento|\bf[ée]rias\b|\badoro\b|\bmais uma (madrugada|noite|queda)|\bich brauch\w* "
    r"(urlaub|kaffee|schlaf)|\btypisch\b|\bna toll\b|想辞职|心累|人生就是|真是好主意",
}

# The third edition, written from chat that sounds like trouble and asked for nothing (a mood, a joke, a note to the
# channel), each beside a real request in the same words: venting and sarcasm in the other languages, laughter, status
# notes, and the bot waved off. Words join their cues as the second edition's do; "laugh" is a cue of its own.
THIRD: dict[str, str] = {
    "vent": r"\b(ugh|argh|rip my|living the dream|love that for us|what a way to|nothing says|bingo card|"
    r"strikes again|here we go again|of all (days|nights)|take it personally|why does this always|why is it always|"
    r"remind me why|another day,? another|send help|i can'?t even|just great|uf|qu[ée] maravilla|qu[ée] bonito|"
    r"siempre me toca|me lo tomo personal|qu[ée] manera de|nada dice|aff|que maravilha|que lindo|que vida|"
    r"sempre (cai|acontece) no meu|pro pessoal|segue o baile|pff|merci la vie|rien de tel|je le prends perso|"
    r"toujours pendant mon|boah|herrlich|ausgerechnet|immer in meiner|nehm ich das pers[öo]nlich|"
    r"sch[öo]ner start)\b|唉|服了|绝了|我真的会谢|心态崩|玄学|习惯了|真棒|又双叒|太难了|救命",
    "laugh": r"\b(lol|lmao|rofl|haha\w*|hehe\w*|jaja\w*|jeje\w*|kkk+|rsrs\w*|mdr|ptdr|xd)\b|哈哈|笑死|😂|🤣|🙃|😅",
    "fyi": r"\b(status( update)?|quick status|heads[- ]up|update for the channel|estado|point d'[ée]tape|"
    r"zwischenstand|stand der dinge)\b ?:|同步(一下|下)|给(频道|大家)同步|进展更新",
    "no_dig": r"\bno need for (the |a )?bot\b|\bno hace falta el bot|\bn[ãa]o precisa (do|de) bot|"
    r"\bpas besoin du bot|\bbot nicht n[öo]tig|不用机器人|不需要机器人",
}

# The fourth edition, from four outside writers: an alert the person has taken ("acked, I'm on it", "bin dran",
# "已认领") and something writing to a disk ("was schreibt da", not a text to write) as cues of their own; the bot
# waved off or stopped, changes asked for, who is on call, how to use the bot, lists, documents, sarcasm in emoji.
FOURTH: dict[str, str] = {
    "taken": r"\b(i'?m on it|(i'?ve|i) got (it|this)(?=[,.!]|$)|(i |we )?ack(ed|'?d)[,.!]|lo cojo yo|me (encargo|"
    r"ocupo)|(ya )?estoy (en ello|mirando|revisando|con eso)|j[aá] estou (a tratar|vendo|olhando|nisso)|deixa comigo|"
    r"je suis dessus|je m'en occupe|c'est pris|je (regarde|check)|(ich )?bin dran|ich (k[üu]mmere mich|schaue)|"
    r"[üu]bernehme ich)\b|已认领|我在处理|我来处理|我在看|我跟进|我来跟",
    "no_dig": r"\bpas d'(enqu[êe]te|analyse|investigation)|\b(kein|ohne) bot\b|\bn[ãa]o [ée] preciso (o |do )?bot|"
    r"\bno (hace falta|necesito) (el|al) bot|不用 ?bot|不需要 ?bot",
    "act": r"^(stop|cancel|abort|arr[êe]te|annule|pare|cancela|stopp|abbrechen)\b|^(停|别查|取消)|"
    r"^(pr[ée]viens|avertis|avis[aá]|avise|alarmier\w*|benachrichtig\w*|d[aá] ack|acquitte|coupe|schalte|abr[ií])\b",
    "request_change": r"\b(pr[ée]vien[ts]|avertis|avis[aá]|avise|alarmier\w*|benachrichtig\w*) (l'|le |la |al? |o |"
    r"die |den )|\bschalte .{0,40} stumm|\bcoupe (l'|les )(alerte|alarme)|\bd[aá] ack\b|\bcancel (that|the|this)\b",
    "value": r"\bwho('s| is)( \w+)? on[- ]?call|\bqui est d'astreinte|\bqui[ée]n (est[aá]|tiene) (de )?guardia|"
    r"\bquem est[aá] de plant[ãa]o|\bwer hat (rufbereitschaft|bereitschaft)|谁值班|谁 ?on-?call|谁在值班",
    "help": r"\bqu[ée] pod[ée]s hacer|\bcomment (on |je )?(t'|vous )utilise|\bwie (benutze|nutze|verwende) ich dich|"
    r"\bc[oó]mo te (uso|utilizo)|\bcomo (eu )?(te )?uso\b|\bcomo usar (voc[êe]|o bot)|怎么使用你",
    "list": r"\bwhat (services|dashboards|alerts) do you know|\bquel(le)?s \w+( \w+){0,3} (tu )?(peux )?(vois|voir)\b|"
    r"\bwhat'?s firing\b|列个|清单|列给我",
    "document": r"\bpost mortem|\btimeline|\b0-?whys|时间线",
    "write": r"出(一)?份|出个",
    "vent": r"🙄|🤷|\bwhat could (possibly )?go wrong|\bnunca falla|\bnever fails|\blove this job",
    "symptom": r"\bno jala\w*|\bse remplit|\bl[äa]uft voll|\bfilled up",
    "investigate": r"\b(voir|regarde|trouve) ce qui|\bce qui a (p[ée]t[ée]|cass[ée]|plant[ée])",
    "writes": r"\b(what|who)('s| is) writing|\best[aá] (escribiendo|escrevendo)|\bqu[ée] escribe|\bo que (escreve|"
    r"est[aá] escrevendo)|\b(ce|celui) qui [ée]crit|\bwas schreibt|\bwer schreibt|在写|写入|写满|写盘",
}

ASKED_CUES = frozenset([*ASKED, *STATED, "laugh", "taken", "writes", "alert", "alert_resolved"]) | {
    "halt",  # the fifth edition's request cues (bot/routing/cues.py FIFTH) and a declined text or value
    "for_text",
    "not_write",
    "not_only",
}

"""Cue words beyond English and Chinese, and the cues of what a message asks the bot to do.

Two parts, both features of the intent classifier (bot/routing/cues.py merges them; they are never rules):
- `MORE`: Spanish, Portuguese, French and German words for cues that cues.py names in English and Chinese. The
  weights a cue earns on thousands of English and Chinese lines then carry over to a language with a few hundred.
- `ASKED`: what the person wants, apart from what the message is about. An incident word says little about the
  request: "don't investigate, just tell me the error rate" names an incident and asks for one value. So: an
  investigation declined ("no need to dig", "sin investigar", "不用查"), the scope of "just"/"only" ("solo el dato",
  "nur den Wert", "只要"), a writing request (a post-mortem, a status-page update, a summary of the thread), a list,
  and a pasted alert (found in the raw text, before code blocks become the word "code"), firing or resolved.

Patterns read normalised text (lower case, NFKC, digit runs as 0); accents are optional where writers drop them.
"""

from __future__ import annotations

import re

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

# a pasted alert, read in the raw text (a code block becomes the word "code" in the features' text)
_ALERT = re.compile(r"\[(firing|warning|critical|alert)[^\]]*\]|\bfiring:|\balertname\b|【告警】|告警[:：]", re.I)
_RESOLVED_ALERT = re.compile(r"\[resolved[^\]]*\]|\bresolved:", re.I)


def alert_cues(raw: str) -> list[str]:
    """ "alert" for a pasted alert that is firing, "alert_resolved" for one that has resolved (both may be)."""
    found = ["alert"] if _ALERT.search(raw) else []
    return found + (["alert_resolved"] if _RESOLVED_ALERT.search(raw) else [])


ASKED_CUES = frozenset([*ASKED, "alert", "alert_resolved"])

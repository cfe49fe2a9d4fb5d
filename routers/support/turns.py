"""Is this turn for the database at all? Checks for turns that are not data questions, whatever their words.

A text-to-SQL assistant reads one database and answers in the chat. Real users also greet it,
thank it, ask it to do things it cannot do and ask it about the world. Each check below is a
class of such turns, written from what the assistant can and cannot do, not from any dataset's
requests:

* **social** (:func:`split_social`): greetings, thanks, acknowledgements and goodbyes at the start
  or end of a request. They decide nothing: "Hi! How many dogs are there?" is the data question
  "How many dogs are there?", and a request that is nothing else ("Thanks, that's all!") is small
  talk. A data question is never sent to chat for being polite or informal.
* **action**: a request for an action outside the database and the chat: sending a message or
  an email, calling, reminding, booking, buying, posting or sharing, building a link or a file to
  hand on, searching the web, translating, drawing a chart. The assistant can only say it
  cannot; SQL generation has nothing to do.
* **general_knowledge**: an encyclopedic question ("who is", "where is ... located", "what does
  ... mean", "the history of") about a value stored in the data, naming no table or column
  besides the value: the database holds the value, not facts about it.
* **small_talk**: a request for entertainment or chatter (a joke, a story, a poem, a song).

Checks are a table (:data:`TURN_CHECKS`, name -> detector returning the matched words or None),
so the ``rules`` router turns each into a rule and an ablation can leave one out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from routerlab.agents.answerability import stem

if TYPE_CHECKING:
    from routerlab.agents.db import Database

__all__ = [
    "TURN_CHECKS",
    "SocialSplit",
    "general_knowledge",
    "requested_action",
    "split_social",
    "without_pleasantries",
]

# -- social words around a request ---------------------------------------------------------------
#: greetings and thanks: removed at the start of a request whatever follows them
_GREETING = (
    r"hi|hello|hey|hiya|howdy|greetings|good (?:morning|afternoon|evening|day)|hola|bonjour|salut|hallo|ciao"
    r"|thanks?(?: you)?(?: (?:so|very) much| a lot| again| a million)?|thx|many thanks|cheers|merci(?: beaucoup)?"
    r"|gracias|danke(?: sch(?:ö|oe)n)?|grazie|much appreciated|i appreciate (?:it|that|your help|the help)"
    r"|appreciate it"
)
#: acknowledgements, praise, goodbyes, courtesy: removed only where punctuation or the end closes
#: them, so an adjective that starts a question ("good restaurants near ...") is kept
_ACK = (
    r"ok(?:ay)?|alright|all right|got it|i see|understood|sounds good|makes sense|great|perfect|awesome|cool"
    r"|nice|excellent|wonderful|fantastic|brilliant|good|fine|lovely|wow|yes|yeah|yep|sure|no problem"
    r"|(?:good|great|nice|excellent) (?:job|work)|well done|bye|goodbye|good ?night|see you(?: later| soon)?"
    r"|have a (?:nice|good|great|lovely) (?:day|one|weekend|evening)|take care|please|kindly"
    r"|(?:that'?s|that is|it'?s|this is) (?:all|it|everything|great|perfect|helpful|fine|good|enough)"
    r"(?: for (?:now|today))?"
    r"|(?:that|this|it) (?:was|is) (?:really |very |super )?(?:helpful|great|perfect|useful|good)"
    r"|nothing else|no more questions"
)
_VOCATIVE = r"(?:\s+(?:there|again|everyone|all|so much|a lot|very much|folks|friend|buddy))*"
_LEAD = re.compile(
    rf"^\W*(?:(?:{_GREETING}){_VOCATIVE}\b[\s!.,;:)~-]*|(?:{_ACK}){_VOCATIVE}(?:\s*[!.,;:~-]+\s*|\s*$))", re.I
)
_TRAIL = re.compile(rf"[\s!.,;:~-]+(?:{_GREETING}|{_ACK}){_VOCATIVE}[\s!.,;:~)-]*$", re.I)


@dataclass(frozen=True)
class SocialSplit:
    """A request split into its social words and the rest.

    Attributes:
        rest: The request without greetings, thanks and acknowledgements around it ("" when it
            holds nothing else).
        social: Whether any social words were found.
    """

    rest: str
    social: bool

    @property
    def only_social(self) -> bool:
        """The request is nothing but social words (small talk)."""
        return self.social and not self.rest


def split_social(text: str) -> SocialSplit:
    """``text`` without the greetings, thanks and acknowledgements at its start and end.

    "Hi! How many dogs are there? Thanks" -> ``SocialSplit("How many dogs are there?", True)``;
    "Thank you so much!" -> ``SocialSplit("", True)``; a request without any -> itself, False.
    """
    rest, social = text.strip(), False
    for _ in range(6):  # "Hi there, thanks! ..." : a few social units in a row, never a loop
        m = _LEAD.match(rest)
        if m is None or not m.group(0).strip():
            break
        rest, social = rest[m.end() :].strip(), True
    for _ in range(6):
        m = _TRAIL.search(rest)
        if m is None:
            break
        rest, social = rest[: m.start()].rstrip(), True
    if social and not re.search(r"\w", rest):
        rest = ""
    return SocialSplit(rest, social)


def without_pleasantries(text: str) -> str:
    """``text`` without the social words around it, or ``text`` itself when it is nothing else.

    What an LM classifier reads: "Hi! How many dogs are there?" is classified as the data question
    it is, and "Thanks!" stays small talk.
    """
    return split_social(text).rest or text


# -- actions the assistant cannot take -------------------------------------------------------------
#: a polite frame before an imperative ("could you please ...")
_FRAME = (
    r"^\W*(?:(?:please|kindly|can you|could you|would you|will you|can u|i want you to|i'?d like you to"
    r"|i need you to|go ahead and|now|then|also|and)\s+)*"
)
_RECIPIENT = r"(?:me|him|her|them|us|my|our|the|this|that|these|those|it|everyone|everybody|all)\b"
_ACTION = re.compile(
    _FRAME + r"(?:"
    # reaching someone: the assistant has no mail, phone or messenger
    rf"(?:e-?mail|text|message|sms|whatsapp|call|phone|ring|fax|ping|notify|alert|remind|contact|invite)\s+{_RECIPIENT}"
    r"|send\s+(?:(?:me|him|her|them|us)\s+)?(?:an?\s+)?(?:e-?mail|message|text|sms|note|letter|invit(?:e|ation)|reminder"
    r"|notification|fax)\b"
    r"|(?:send|forward|share|post|tweet|publish|upload)\s+(?:this|that|it|these|those|them|the (?:list|result|results"
    r"|table|answer|report|numbers?))\b(?:\s+\w+){0,3}\s+(?:to|with|on)\b"
    # transactions and bookings
    r"|(?:book|reserve)\s+(?:me\s+)?(?:an?|the|two|some)\s+\w+"
    r"|(?:buy|purchase|pay for|order)\s+(?:me|us)\b|(?:buy|purchase)\s+(?:an?|the|two|some)\s+\w+"
    r"|(?:set|schedule)\s+(?:up\s+)?(?:an?\s+)?(?:reminder|alarm|meeting|appointment|call)\b"
    r"|print\s+(?:this|that|it|them)\b"
    # the web and other languages: the assistant reads one database, it browses and translates nothing
    r"|(?:search|google|look up|browse)\s+(?:the\s+)?(?:web|internet|online)\b|google\s+(?:it|this|that|for)\b"
    r"|translate\s+(?:this|that|it|them|the (?:answer|result|results|list|table))\b"
    r")"
    # a picture of the answer: the assistant answers in text and tables, it draws nothing
    r"|\b(?:draw|plot|make|create|build|generate|give|show)\s+(?:me\s+|us\s+)?(?:an?\s+|the\s+)?"
    r"(?:(?:bar|pie|line|scatter)\s+)?(?:chart|graph|diagram|histogram|visuali[sz]ation)s?\b"
    # artefacts to hand on: a link, a QR code, a calendar event, a file, wherever the verb stands
    r"|\b(?:make|create|build|generate|give|send|get|share|set up|produce)\s+(?:me\s+|us\s+)?(?:an?\s+|the\s+)?"
    r"(?:(?:shareable|sharable|public|short|download|direct)\s+)?(?:link|url|hyperlink|shortcut|qr code"
    r"|calendar (?:event|invite|entry))s?\b",
    re.I,
)


def requested_action(text: str, _db: Database | None = None) -> str | None:
    """The words asking for an action the assistant cannot take, or None."""
    m = _ACTION.search(split_social(text).rest or text)
    return m.group(0).strip() if m else None


# -- general knowledge about a value ---------------------------------------------------------------
_ENCYCLOPEDIC = re.compile(
    r"^\W*(?:who (?:is|was|are|were)\b|where (?:is|are|was|were)\b.*\blocated\b"
    r"|where (?:is|are)\b.*\bon (?:a|the) map\b|what does\b.*\b(?:mean|stand for)\b"
    r"|what (?:is|are|was) the (?:capital|history|meaning|origin|population|language|currency|flag|climate"
    r"|weather)\b|tell me (?:a (?:bit|little) |more |something )?about the (?:history|origin|culture) of\b"
    r"|why (?:is|are|was)\b.*\b(?:famous|called|known)\b|what (?:is|are)\b.*\bknown for\b)",
    re.I,
)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "is",
        "are",
        "was",
        "were",
        "who",
        "what",
        "where",
        "why",
        "does",
        "do",
        "did",
        "mean",
        "stand",
        "tell",
        "me",
        "about",
        "bit",
        "little",
        "more",
        "something",
        "located",
        "map",
        "known",
        "famous",
        "called",
        "and",
        "or",
        "it",
        "its",
        "their",
        "there",
        "this",
        "that",
    ]
)


def general_knowledge(text: str, db: Database | None) -> str | None:
    """A stored value the request asks encyclopedic facts about (naming no table or column), or None."""
    text = split_social(text).rest or text
    if db is None or not _ENCYCLOPEDIC.search(text):
        return None
    # imported here: the ambiguity module's bounded, cached value reads (it imports nothing of this one)
    from routerlab.routers.support.ambiguity import schema_words, text_values

    low = text.lower()
    hits = {
        v
        for _, _, values in text_values(db)
        for v in values
        if len(v) >= 3 and not v.isdigit() and re.search(rf"(?<!\w){re.escape(v.lower())}(?!\w)", low)
    }
    if not hits:
        return None
    value = max(hits, key=len)
    if re.match(r"^\W*who (?:is|was|are|were)\b", low) and not re.match(
        rf"^\W*who (?:is|was|are|were) (?:the )?{re.escape(value.lower())}\b", low
    ):
        return None  # "who is from France": who is asked for, a data question; "who is X" asks about X
    rest = re.sub(rf"(?<!\w){re.escape(value.lower())}(?!\w)", " ", low)
    words = [w for w in re.findall(r"[a-z0-9]+", rest) if w not in _STOP]
    if any(stem(w) in schema_words(db) for w in words):
        return None  # "who is the oldest singer": it names the schema, a data question
    return value


# -- small talk -------------------------------------------------------------------------------------
_SMALL_TALK = re.compile(
    r"\b(?:tell|give|write|sing|share)\s+(?:me\s+|us\s+)?(?:a|an|another|one more|some)\s+(?:\w+\s+)?"
    r"(?:joke|story|poem|song|riddle|haiku|limerick|fun fact|pun)s?\b"
    r"|\b(?:are you|is anybody|is anyone|anybody|anyone) (?:there|around|awake|listening)\b"
    r"|\bhow(?:'s| is) (?:it going|your day|life)\b|\bwhat'?s up\b|\bnice to meet you\b"
    r"|\b(?:qu(?:é|e) tal|(?:ç|c)a va|wie geht'?s)\b",
    re.I,
)


def small_talk(text: str, _db: Database | None = None) -> str | None:
    """The words asking for chatter or entertainment, or None."""
    m = _SMALL_TALK.search(text)
    return m.group(0) if m else None


def _social_only(text: str, _db: Database | None = None) -> str | None:
    return text.strip() if split_social(text).only_social else None


#: one detector per kind of turn that is not for the database; each returns the matched words
TURN_CHECKS: dict[str, Callable[[str, Any], str | None]] = {
    "social": _social_only,
    "action": requested_action,
    "general_knowledge": general_knowledge,
    "small_talk": small_talk,
}

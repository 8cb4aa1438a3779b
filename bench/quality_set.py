"""A labelled memory set for measuring memory hygiene: restatements, updates, look-alikes, contradictions and
unrelated decisions, each memory labelled with its fact, subject and topic (bench/quality.py reads the labels).

Restatements vary framing, word order, inflection, casing and punctuation, and some add words a restatement
can carry ("in review", "again"): they are labelled duplicates all the same, so recall counts what the rules
miss. Look-alikes differ from a fact in one entity, one number, one relation side or a negation; each is a
fact of its own about a subject of its own. Updates announce a change with varied wording and come at least
two days after every memory stating the old fact.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NAMESPACE = uuid.UUID("0c9f2a4e-5b61-4e0f-9d0a-7a3b1c2d4e5f")


@dataclass
class Memory:
    content: str
    type: str
    fact: str
    subject: str
    topic: str
    kind: str  # restatement, update, lookalike, unrelated, contradiction
    when: datetime
    id: str = ""


@dataclass
class LabelledSet:
    memories: list[Memory] = field(default_factory=list)
    supersedes: list[tuple[str, str]] = field(default_factory=list)  # (newer id, older id)
    contradicts: list[tuple[str, str]] = field(default_factory=list)


# Each family: a type, restatement templates, the facts (slot values), look-alikes and updates of some facts.
DECISIONS = {
    "restate": ["Decided to use {x} for {y}", "We chose {x} for {y}", "{x} was chosen for {y}",
                "We are going with {x} for {y}", "Use {x} for {y}", "For {y} we picked {x}",
                "Decision: {x} for {y}", "The team agreed on {x} for {y}", "Use {x} for {y}, decided in review"],
    "update": ["Switched {y} from {x} to {z}", "We replaced {x} with {z} for {y}", "{y} now uses {z} instead of {x}",
               "Migrated {y} from {x} to {z}", "We no longer use {x} for {y}; {z} instead",
               "As of April, {y} runs on {z} rather than {x}"],
    # (value, subject, another value, another subject, topic)
    "facts": [("PostgreSQL", "the billing database", "MySQL", "the analytics database", "billing"),
              ("Redis", "session caching", "Memcached", "page caching", "caching"),
              ("Kafka", "the event bus", "RabbitMQ", "the job queue", "messaging"),
              ("Terraform", "infrastructure provisioning", "Pulumi", "DNS provisioning", "infrastructure"),
              ("GitHub Actions", "the CI pipeline", "Jenkins", "the release pipeline", "ci"),
              ("Sentry", "error tracking", "Rollbar", "performance tracking", "observability"),
              ("Grafana", "metrics dashboards", "Kibana", "log dashboards", "observability"),
              ("Go", "the ingestion service", "Rust", "the export service", "ingestion"),
              ("React", "the admin frontend", "Vue", "the customer frontend", "frontend"),
              ("S3", "nightly backups", "GCS", "weekly backups", "backups"),
              ("Auth0", "customer login", "Keycloak", "employee login", "identity"),
              ("Stripe", "card payments", "Adyen", "bank payments", "billing"),
              ("Elasticsearch", "product search", "Meilisearch", "docs search", "search"),
              ("Kubernetes", "the web services", "Nomad", "the batch jobs", "platform"),
              ("OpenTelemetry", "request tracing", "Jaeger", "queue tracing", "observability"),
              ("Snowflake", "the data warehouse", "BigQuery", "the marketing warehouse", "data"),
              ("Figma", "product design", "Sketch", "marketing design", "design")],
    # One entity swapped (the value, or the subject), or the decision negated.
    "lookalike": ["Decided to use {z} for {y}", "Decided to use {x} for {w}", "Decided not to use {x} for {y}"],
}
PREFERENCES = {
    "restate": ["User prefers {x}", "The user likes {x}", "{x} is what the user prefers", "User wants {x}",
                "user prefers {x}!", "USER PREFERS {x}", "The user has a preference for {x}",
                "User asked again for {x}"],
    "update": ["User no longer prefers {x}", "User now prefers {z} instead of {x}",
               "The user switched from {x} to {z}"],
    "facts": [("dark mode in the code editor", "light mode in the code editor", "editor"),
              ("short answers with the code first", "long answers with the code last", "answers"),
              ("tabs over spaces", "spaces over tabs", "formatting"),
              ("metric units in reports", "imperial units in reports", "reports"),
              ("a summary email every Friday", "a summary email every Monday", "email"),
              ("reviews before lunch", "reviews after lunch", "reviews")],
    "lookalike": ["User prefers {z}", "User does not like {x}"],
}
SCHEDULES = {
    "restate": ["{x} happen on {d}", "{x} are on {d}", "{x} take place every {d}", "On {d} we do {x}",
                "{x}: {d}", "{x} happen on {d}s", "We always do {x} on {d}"],
    "update": ["{x} moved from {d} to {e}", "{x} now happen on {e}", "{x} were rescheduled from {d} to {e}",
               "As of March, {x} are on {e} instead of {d}", "We changed {x} from {d} to {e}"],
    # (subject, day, the day it moves to, another subject, a third day, topic)
    "facts": [("production deploys", "Tuesday", "Thursday", "staging deploys", "Monday", "deploys"),
              ("team retros", "Friday", "Wednesday", "design reviews", "Thursday", "rituals"),
              ("payroll runs", "Monday", "Tuesday", "expense reports", "Friday", "finance"),
              ("restore drills", "Wednesday", "Friday", "failover drills", "Tuesday", "backups"),
              ("sprint planning sessions", "Monday", "Thursday", "roadmap reviews", "Wednesday", "rituals"),
              ("security reviews", "Thursday", "Monday", "budget reviews", "Tuesday", "security"),
              ("database backups", "Sunday", "Saturday", "log rotations", "Wednesday", "backups")],
    # The same day for another subject, or the same subject on a third day (no change announced).
    "lookalike": ["{w} happen on {d}", "{x} happen on {f}"],
}
SETTINGS = {
    "restate": ["The {x} is {n} {u}", "{x}: {n} {u}", "The {x} is set to {n} {u}", "We keep the {x} at {n} {u}",
                "the {x} is {nw} {u}.", "{x} = {n} {u}", "Our {x} is {n} {u}"],
    "update": ["The {x} changed from {n} to {m} {u}", "The {x} is now {m} {u}", "Raised the {x} from {n} to {m} {u}",
               "We moved the {x} from {n} {u} to {m} {u}"],
    "facts": [("cache TTL", 5, 15, "minutes", "caching"), ("API request timeout", 30, 60, "seconds", "api"),
              ("retry limit for webhooks", 3, 5, "attempts", "api"),
              ("maximum upload size", 25, 100, "megabytes", "storage"),
              ("session length", 8, 12, "hours", "identity"),
              ("log retention", 14, 30, "days", "observability"),
              ("minimum password length", 12, 16, "characters", "identity"),
              ("export batch size", 500, 1000, "rows", "data")],
    "lookalike": [("{x}|{k}", 0)],
}
NUMBER_WORDS = {3: "three", 5: "five", 8: "eight", 12: "twelve", 14: "fourteen", 15: "fifteen", 25: "twenty-five",
                30: "thirty", 60: "sixty", 100: "one hundred"}
STATEMENTS = [  # Habit / Pattern / Insight / Context facts, with restatements and a negated look-alike
    ("Habit", "reviews", ["User reviews pull requests first thing every morning",
                          "Every morning the user starts by reviewing pull requests",
                          "user reviews pull requests every morning first thing"],
     "User does not review pull requests in the morning"),
    ("Pattern", "deploys", ["Friday production deploys often fail and need a rollback",
                            "Production deploys on Friday often fail and need a rollback",
                            "friday production deploys often fail, and need a rollback!"],
     "Friday production deploys rarely fail and need a rollback"),
    ("Insight", "caching", ["Caching the pricing table cut billing latency in half",
                            "Billing latency was cut in half by caching the pricing table"],
     "Caching the pricing table doubled billing latency"),
    ("Pattern", "testing", ["Flaky tests cluster around code that sleeps instead of waiting on events",
                            "flaky tests cluster around code which sleeps instead of waiting on events"],
     "Flaky tests cluster around code that waits on events instead of sleeping"),
    ("Insight", "testing", ["Most production incidents trace back to missing integration tests",
                            "Missing integration tests are behind most production incidents"],
     "Most production incidents trace back to missing unit tests"),
    ("Context", "infrastructure", ["The staging cluster runs on three small virtual machines",
                                   "Staging cluster: 3 small virtual machines",
                                   "the staging cluster runs on 3 small virtual machines"],
     "The staging cluster runs on five small virtual machines"),
    ("Pattern", "support", ["Support tickets spike on the first Monday of each month",
                            "On the first Monday of each month support tickets spike"],
     "Support tickets spike on the last Monday of each month"),
    ("Insight", "deploys", ["Feature flags make rollbacks faster", "Rollbacks are faster with feature flags"],
     "Feature flags make rollbacks slower"),
    ("Habit", "writing", ["User writes commit messages in the imperative mood",
                          "Commit messages are written by the user in the imperative mood",
                          "user writes commit messages in imperative mood"],
     "User writes commit messages in the past tense"),
    ("Context", "platform", ["The mobile app supports Android 10 and newer",
                             "Android 10 and newer are supported by the mobile app"],
     "The mobile app supports Android 12 and newer"),
    ("Pattern", "support", ["Password reset emails land in spam for Outlook users",
                            "For Outlook users, password reset emails land in spam"],
     "Password reset emails land in spam for Gmail users"),
]
# Memories of different types about one thing: what shares_theme and explains should link (same topic).
THEMES = [
    ("invoicing", [("Decision", "Generate invoices with a nightly batch job"),
                   ("Context", "The nightly invoicing batch job runs at 2am and takes forty minutes"),
                   ("Pattern", "The nightly invoicing batch job slows down at month end"),
                   ("Insight", "The invoicing batch job slows down at month end because most plans renew then")]),
    ("deploys", [("Pattern", "Production deploys on Friday afternoons often need a rollback"),
                 ("Insight", "Friday afternoon production deploys need rollbacks because reviewers have left"),
                 ("Decision", "No production deploys after Friday noon"),
                 ("Context", "Production deploys go through the release pipeline in GitHub Actions")]),
    ("caching", [("Insight", "Caching the pricing table removed most billing latency"),
                 ("Pattern", "Billing latency spikes whenever the pricing table cache is cold"),
                 ("Context", "The pricing table cache lives in Redis with a five minute TTL")]),
    ("testing", [("Pattern", "Flaky end to end tests fail mostly on the checkout flow"),
                 ("Insight", "Checkout end to end tests are flaky because they wait on fixed sleeps"),
                 ("Habit", "User reruns flaky checkout tests before reporting them")]),
    ("identity", [("Context", "Customer login sessions expire after twelve hours of inactivity"),
                  ("Pattern", "Support tickets about logouts peak when customer login sessions expire"),
                  ("Insight", "Customer login sessions expire mid task, which drives logout support tickets")]),
    ("observability", [("Context", "Error tracking alerts go to the on-call channel in Slack"),
                       ("Pattern", "Error tracking alerts spike after every mobile release"),
                       ("Insight", "Mobile releases spike error tracking alerts because old clients keep retrying")]),
    ("editor", [("Preference", "User prefers a monospace font with ligatures in the code editor"),
                ("Habit", "User switches the code editor to a monospace font with ligatures on new machines"),
                ("Style", "Code samples in docs use a monospace font with ligatures")]),
    ("reviews", [("Habit", "User reviews pull requests before lunch"),
                 ("Pattern", "Pull requests opened after lunch wait a day for review"),
                 ("Insight", "Pull requests wait a day for review because reviews happen before lunch")]),
]
UNRELATED = [
    "Adopt trunk based development with short lived branches", "Keep the monolith until the team has twenty engineers",
    "Log every timestamp in UTC", "Write architecture decisions down as ADRs", "Require two approvals for schema changes",
    "Freeze releases during the last week of the quarter", "Store secrets in the cloud secret manager",
    "Tag every Docker image with the git commit", "Run load tests before each major release",
    "Keep API versions for at least twelve months", "Route on-call pages through PagerDuty",
    "Publish the public roadmap every quarter", "Encrypt customer exports at rest",
    "Limit meetings to forty minutes", "Prefer composition over inheritance in the SDK",
    "Deprecate the XML endpoint by the end of the year", "Use semantic versioning for the client libraries",
    "Hire a dedicated security engineer next quarter", "Move design docs into the engineering wiki",
    "Cap cloud spend alerts at eighty percent of budget", "Give interns a buddy for their first month",
    "Archive Slack channels after ninety days without posts", "Rotate database credentials every month",
    "Serve the marketing site from a CDN", "Document every public API with examples",
    "Sign release artifacts with Sigstore", "Ask customers for consent before recording calls",
    "Track tech debt in a dedicated board", "Benchmark the search service weekly",
    "Pin all container base images by digest", "Mirror the package registry for offline builds",
    "Keep feature branches shorter than a week", "Print invoices in the customer's own currency",
    "Put every cron job under version control", "Send the weekly status note on Thursday afternoons",
    "Use British spelling in customer-facing copy", "Review vendor contracts before each renewal",
    "Buy laptops on a three year refresh cycle", "Translate the onboarding guide into Spanish",
    "Keep the staging data anonymised", "Answer security questionnaires within five working days",
    "Run a game day every six months", "Give every service an owner in the catalogue",
    "Show prices including VAT for European customers", "Retire the legacy reporting cluster next year",
    "Accept bug reports only through the issue tracker", "Keep the README of each repository current",
    "Run dependency updates through Renovate", "Hold a blameless review after every major incident",
]


def build(seed: int = 11) -> LabelledSet:
    """The whole set, deterministic for a seed."""
    rng = random.Random(seed)
    out = LabelledSet()
    _decisions(out, rng)
    _preferences(out, rng)
    _schedules(out, rng)
    _settings(out, rng)
    _statements(out, rng)
    _unrelated(out, rng)
    _themes(out, rng)
    _contradictions(out, rng)
    for index, memory in enumerate(out.memories):
        memory.id = str(uuid.uuid5(NAMESPACE, f"{index}:{memory.content}"))
    out.supersedes = [(out.memories[a].id, out.memories[b].id) for a, b in out.supersedes]
    out.contradicts = [(out.memories[a].id, out.memories[b].id) for a, b in out.contradicts]
    return out


def _decisions(out: LabelledSet, rng: random.Random) -> None:
    for n, (x, y, z, w, topic) in enumerate(DECISIONS["facts"]):
        fact = f"decision-{n}"
        olds = _restatements(out, rng, DECISIONS["restate"], {"x": x, "y": y}, "Decision", fact, fact, topic)
        text = DECISIONS["lookalike"][n % 3].format(x=x, y=y, z=z, w=w)
        _add(out, rng, text, "Decision", f"{fact}-lookalike", f"{fact}-lookalike", topic, "lookalike")
        if n % 2 == 0:
            _update(out, rng, DECISIONS["update"], {"x": x, "y": y, "z": z}, "Decision", fact, topic, olds, n)


def _preferences(out: LabelledSet, rng: random.Random) -> None:
    for n, (x, z, topic) in enumerate(PREFERENCES["facts"]):
        fact = f"preference-{n}"
        olds = _restatements(out, rng, PREFERENCES["restate"], {"x": x}, "Preference", fact, fact, topic)
        _add(out, rng, PREFERENCES["lookalike"][n % 2].format(x=x, z=z), "Preference", f"{fact}-lookalike",
             f"{fact}-lookalike", topic, "lookalike")
        if n % 2 == 1:
            _update(out, rng, PREFERENCES["update"], {"x": x, "z": z}, "Preference", fact, topic, olds, n)


def _schedules(out: LabelledSet, rng: random.Random) -> None:
    for n, (x, d, e, w, f, topic) in enumerate(SCHEDULES["facts"]):
        fact = f"schedule-{n}"
        olds = _restatements(out, rng, SCHEDULES["restate"], {"x": x, "d": d}, "Context", fact, fact, topic)
        _add(out, rng, SCHEDULES["lookalike"][n % 2].format(x=x, d=d, w=w, f=f), "Context", f"{fact}-lookalike",
             f"{fact}-lookalike", topic, "lookalike")
        _update(out, rng, SCHEDULES["update"], {"x": x, "d": d, "e": e}, "Context", fact, topic, olds, n)


def _settings(out: LabelledSet, rng: random.Random) -> None:
    for n, (x, value, new, unit, topic) in enumerate(SETTINGS["facts"]):
        fact = f"setting-{n}"
        slots = {"x": x, "n": value, "nw": NUMBER_WORDS.get(value, value), "u": unit}
        olds = _restatements(out, rng, SETTINGS["restate"], slots, "Fact", fact, fact, topic)
        other = value * 2 if value * 2 != new else value + 1
        _add(out, rng, f"The {x} is {other} {unit}", "Fact", f"{fact}-lookalike", f"{fact}-lookalike", topic,
             "lookalike")
        if n % 3 != 2:
            _update(out, rng, SETTINGS["update"], {**slots, "m": new}, "Fact", fact, topic, olds, n)


def _statements(out: LabelledSet, rng: random.Random) -> None:
    for n, (memory_type, topic, restatements, negated) in enumerate(STATEMENTS):
        fact = f"statement-{n}"
        for text in restatements:
            _add(out, rng, text, memory_type, fact, fact, topic, "restatement", day=n * 9)
        _add(out, rng, negated, memory_type, f"{fact}-lookalike", f"{fact}-lookalike", topic, "lookalike")


def _unrelated(out: LabelledSet, rng: random.Random) -> None:
    for n, text in enumerate(UNRELATED):
        _add(out, rng, text, "Decision", f"unrelated-{n}", f"unrelated-{n}", f"unrelated-{n}", "unrelated")


def _themes(out: LabelledSet, rng: random.Random) -> None:
    for topic, members in THEMES:
        day = rng.randint(0, 100)
        for n, (memory_type, text) in enumerate(members):
            fact = f"theme-{topic}-{n}"
            _add(out, rng, text, memory_type, fact, fact, topic, "unrelated", day=day + n)


def _contradictions(out: LabelledSet, rng: random.Random) -> None:
    """A change recorded before (or together with) the statement it changes: no clear order."""
    cases = [("Context", "On-call handovers happen on Wednesday", "On-call handovers moved from Wednesday to Monday",
              -5), ("Fact", "The build timeout is 20 minutes", "The build timeout changed from 20 to 40 minutes", 0),
             ("Decision", "Use Datadog for log search", "We replaced Datadog with Loki for log search", -3)]
    for n, (memory_type, statement, change, offset) in enumerate(cases):
        subject, topic = f"contradiction-{n}", "conflicts"
        when = START + timedelta(days=60 + 7 * n)
        first = len(out.memories)
        out.memories.append(Memory(statement, memory_type, f"{subject}-a", subject, topic, "contradiction", when))
        out.memories.append(Memory(change, memory_type, f"{subject}-b", subject, topic, "contradiction",
                                   when + timedelta(days=offset)))
        out.contradicts.append((first + 1, first))


def _restatements(out, rng, templates, slots, memory_type, fact, subject, topic) -> list[int]:
    count = rng.randint(2, 5)
    day = rng.randint(0, 50)
    chosen = rng.sample(templates, count)
    indexes = []
    for template in chosen:
        indexes.append(_add(out, rng, template.format(**slots), memory_type, fact, subject, topic, "restatement",
                            day=day + rng.randint(0, 20)))
    return indexes


def _update(out, rng, templates, slots, memory_type, fact, topic, olds, n) -> None:
    latest = max(out.memories[i].when for i in olds)
    # Some updates are stored twice, in other words: both must name the new value to state the same fact.
    naming = [t for t in templates if "{z}" in t or "{e}" in t or "{m}" in t]
    chosen = rng.sample(naming, 2) if n % 3 == 0 and len(naming) > 1 else rng.sample(templates, 1)
    for k, template in enumerate(chosen):
        index = len(out.memories)
        when = latest + timedelta(days=2 + rng.randint(0, 10) + k)
        out.memories.append(Memory(_vary(template.format(**slots), rng), memory_type, f"{fact}-update", fact,
                                   topic, "update", when))
        out.supersedes.extend((index, old) for old in olds)


def _add(out, rng, text, memory_type, fact, subject, topic, kind, day=None) -> int:
    day = rng.randint(0, 120) if day is None else day
    when = START + timedelta(days=day, hours=rng.randint(0, 9), minutes=rng.randint(0, 59))
    out.memories.append(Memory(_vary(text, rng), memory_type, fact, subject, topic, kind, when))
    return len(out.memories) - 1


def _vary(text: str, rng: random.Random) -> str:
    """Casing and punctuation as agents write them."""
    text = text[0].upper() + text[1:]
    roll = rng.random()
    if roll < 0.15:
        text = text.lower()
    elif roll < 0.25:
        text += "."
    elif roll < 0.3:
        text += "!"
    return text

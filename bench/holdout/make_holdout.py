#!/usr/bin/env python3
"""Generate the held-out memory-hygiene test set.

Deterministic (fixed seed). Writes, next to this file:
  holdout.jsonl         one memory per line
  holdout_labels.json   ground-truth labels
  README.md             description, counts, example rows

Standard library only (Python 3.12).
"""
from __future__ import annotations

import json
import random
import re
import uuid
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

SEED = 20260704
OUT = Path(__file__).resolve().parent
BASE = datetime(2026, 1, 1, tzinfo=timezone.utc)
END = datetime(2026, 6, 30, 23, 59, 59, tzinfo=timezone.utc)

# ---------------------------------------------------------------------------
# Fact groups.
#   r   : restatements of one fact (same entities / numbers / values)
#   u   : optional update (changes the fact; phrasings of the SAME new fact)
#   la  : look-alikes, (category, text); each differs from a restatement in
#         exactly one entity, one number, or by a negation
#   min_day / old_max / upd_min / upd_max : day offsets from 2026-01-01
# ---------------------------------------------------------------------------
G = dict  # shorthand

GROUPS = [
    # ---- deployment -------------------------------------------------------
    G(key="prod_deploy_day", topic="deployment", type="Decision",
      r=["Production releases go out every Thursday.",
         "We ship to prod on Thursdays",
         "Thursday is the team's production deploy day.",
         "Deploys to the production environment are scheduled for Thursdays.",
         "prod releases happen on thursday each week",
         "Thursdays are release days for PRODUCTION."],
      u=["Prod deploys moved from Thursday to Wednesday.",
         "As of April, production releases happen on Wednesdays rather than Thursdays."],
      upd_min=90,
      la=[("entity", "We ship to staging on Thursdays")]),
    G(key="deploy_freeze", topic="deployment", type="Decision",
      r=["No deploys are allowed after 3pm on Fridays.",
         "Friday deploy freeze starts at 3 PM.",
         "After 15:00 on a Friday, nothing gets deployed",
         "The team freezes deployments from 3pm every Friday."],
      la=[("negation", "The team does not freeze deployments from 3pm every Friday.")]),
    G(key="rollback", topic="deployment", type="Pattern",
      r=["Rollbacks are done by redeploying the previous Helm release.",
         "To roll back, we redeploy the prior helm release",
         "Rolling back means redeploying the previous Helm chart release.",
         "Whenever a rollback is needed, the previous Helm release gets redeployed."],
      u=["Rollbacks no longer redeploy the previous Helm release; we now shift traffic back with Argo Rollouts instead."]),
    # ---- kubernetes --------------------------------------------------------
    G(key="k8s_version", topic="kubernetes cluster", type="Fact",
      r=["The main k8s cluster runs Kubernetes 1.29.",
         "Kubernetes version on the primary cluster is 1.29",
         "Our primary Kubernetes cluster is on v1.29.",
         "K8S 1.29 is what the main cluster runs"],
      u=["The main k8s cluster was upgraded from 1.29 to 1.31."],
      la=[("entity", "The analytics k8s cluster runs Kubernetes 1.29.")]),
    # ---- billing database --------------------------------------------------
    G(key="billing_db_engine", topic="billing database", type="Fact",
      r=["The billing service stores its data in PostgreSQL.",
         "Billing DB is Postgres.",
         "PostgreSQL is the database behind billing",
         "billing runs on a postgres database",
         "Database used by the billing service: PostgreSQL."],
      u=["Billing migrated from PostgreSQL to CockroachDB."],
      la=[("entity", "The payroll service stores its data in PostgreSQL.")]),
    G(key="billing_backups", topic="billing database", type="Habit",
      r=["The billing DB is backed up every 6 hours.",
         "Billing database backups run every six hours",
         "Every 6h a backup of the billing database is taken.",
         "We snapshot the billing DB four times a day, once every 6 hours."],
      la=[("number", "The billing DB is backed up every 12 hours.")]),
    # ---- editor preferences ------------------------------------------------
    G(key="editor", topic="editor preferences", type="Preference",
      r=["User prefers Neovim as their code editor.",
         "Neovim is the user's editor of choice",
         "the user likes to code in neovim",
         "Preferred editor: Neovim."],
      u=["User switched from Neovim to Zed as their main editor."]),
    G(key="python_indent", topic="editor preferences", type="Style",
      r=["User wants Python indented with 4 spaces.",
         "Four-space indentation for Python, per the user's preference.",
         "Python code should use 4 spaces per indent level for this user",
         "user's python indent width: 4 spaces"],
      la=[("negation", "User does not want Python indented with 4 spaces.")]),
    G(key="dark_theme", topic="editor preferences", type="Preference",
      r=["User prefers a dark theme in every IDE.",
         "Dark mode everywhere: that's how the user likes their IDEs",
         "The user always picks dark themes for IDEs."],
      la=[("negation", "User doesn't prefer a dark theme in every IDE.")]),
    # ---- team rituals ------------------------------------------------------
    G(key="standup_time", topic="team rituals", type="Habit",
      r=["Daily standup is at 9:30 AM.",
         "The team meets for standup every day at 9:30",
         "Standup: 09:30 each morning.",
         "Every morning at 9:30 the team holds its stand-up."],
      u=["Standup changed from 9:30 to 10:00.",
         "daily standup now starts at 10:00 instead of 9:30"]),
    G(key="retro_cadence", topic="team rituals", type="Decision",
      r=["Sprint retrospectives happen every two weeks.",
         "We run a retro every 2 weeks.",
         "Retros are held every two weeks, at the end of each sprint",
         "the team holds its retrospective once every 2 weeks"],
      la=[("number", "We run a retro every 6 weeks.")]),
    G(key="sprint_length", topic="team rituals", type="Fact",
      r=["Sprints are two weeks long.",
         "Our sprint length is 2 weeks",
         "Each sprint lasts two weeks.",
         "the team works in 2-week sprints"],
      la=[("number", "Sprints are three weeks long.")]),
    # ---- code review -------------------------------------------------------
    G(key="pr_approvals", topic="code review", type="Decision",
      r=["Every pull request needs two approvals before merging.",
         "PRs require 2 approving reviews to merge",
         "Two reviewers must approve a PR before it can be merged.",
         "merging a pull request takes 2 approvals",
         "A PR can't be merged until TWO people approve it.",
         "2 approvals are required on every PR before merge."],
      u=["PRs now need just one approval instead of two."]),
    G(key="commit_style", topic="code review", type="Style",
      r=["Commit messages follow the Conventional Commits format.",
         "We write commits using Conventional Commits",
         "conventional commits style is required for all commit messages",
         "All commit messages must use the Conventional Commits convention."],
      la=[("negation", "Commit messages don't follow the Conventional Commits format.")]),
    # ---- mobile app --------------------------------------------------------
    G(key="ios_min", topic="mobile app", type="Fact",
      r=["The iOS app supports iOS 16 and later.",
         "Minimum supported iOS version for our app is 16.",
         "Our iPhone app runs on iOS 16+",
         "iOS 16 is the oldest version the iOS app still supports."]),
    G(key="android_offline", topic="mobile app", type="Fact",
      r=["The Android app has an offline mode.",
         "Offline mode is available in the Android app",
         "Our Android client works offline.",
         "android app: offline mode supported"],
      la=[("entity", "The iOS app has an offline mode."),
          ("negation", "The Android app does not have an offline mode.")]),
    # ---- pricing -----------------------------------------------------------
    G(key="pro_price", topic="pricing", type="Fact",
      r=["The Pro plan costs $29 per month.",
         "Pro is priced at 29 dollars a month",
         "Monthly price of the Pro tier: $29.",
         "Customers on Pro pay $29/month.",
         "pro plan = $29 monthly"],
      u=["The Pro plan's price went from $29 to $35 a month."]),
    G(key="trial_length", topic="pricing", type="Fact",
      r=["New accounts get a 14-day free trial.",
         "The free trial lasts fourteen days",
         "Trial period for new sign-ups is 14 days.",
         "Signups get 14 days free before billing starts."],
      la=[("number", "New accounts get a 30-day free trial.")]),
    # ---- customer support --------------------------------------------------
    G(key="p1_sla", topic="customer support", type="Decision",
      r=["Priority-1 tickets must get a first response within 1 hour.",
         "P1 support tickets: first reply within one hour.",
         "We answer P1 tickets within 1 hour",
         "First response time for priority 1 tickets is one hour."],
      la=[("number", "Priority-2 tickets must get a first response within 1 hour.")]),
    G(key="escalation", topic="customer support", type="Habit",
      r=["Unresolved tickets are escalated to engineering after 48 hours.",
         "After 48 hours without resolution, a ticket goes to engineering.",
         "support escalates to eng once a ticket is 48h old and still open",
         "Tickets still open after forty-eight hours get escalated to the engineering team"],
      u=["Unresolved tickets now go to engineering after 24 hours instead of 48."]),
    # ---- security ----------------------------------------------------------
    G(key="mfa", topic="security", type="Decision",
      r=["MFA is mandatory for all employee accounts.",
         "All staff accounts must have multi-factor authentication enabled",
         "Every employee account requires MFA.",
         "multi-factor auth is required on every employee login"],
      la=[("entity", "MFA is mandatory for all contractor accounts."),
          ("negation", "MFA is not mandatory for all employee accounts.")]),
    G(key="pw_rotation", topic="security", type="Fact",
      r=["Service account passwords rotate every 90 days.",
         "Every ninety days the service account passwords are rotated",
         "Rotation period for service-account passwords: 90 days.",
         "We rotate passwords on service accounts every 90 days."],
      u=["Service account passwords are no longer rotated every 90 days; short-lived tokens replaced them."],
      la=[("number", "Service account passwords rotate every 30 days.")]),
    G(key="vpn_port", topic="security", type="Fact",
      r=["Port 5432 is reachable only over the VPN.",
         "The Postgres port 5432 can only be accessed through the VPN",
         "5432 is VPN-only.",
         "Access to port 5432 requires being on the VPN"],
      la=[("number", "Port 6432 is reachable only over the VPN.")]),
    # ---- observability -----------------------------------------------------
    G(key="paging_rule", topic="observability", type="Decision",
      r=["The on-call gets paged when the error rate stays above 2% for 5 minutes.",
         "Paging rule: error rate over 2% for five minutes.",
         "If errors exceed 2 percent for 5 min, on-call is paged",
         "On-call is paged after five minutes of error rate above 2%."],
      la=[("number", "The on-call gets paged when the error rate stays above 2% for 15 minutes.")]),
    G(key="log_backend", topic="observability", type="Fact",
      r=["Application logs are shipped to Grafana Loki.",
         "We send app logs to Loki",
         "Loki (Grafana) is where the application logs end up.",
         "application logs go to grafana loki"],
      u=["Application logs were moved from Loki to Elasticsearch.",
         "We replaced Grafana Loki with Elasticsearch for app logs."],
      la=[("entity", "Audit logs are shipped to Grafana Loki.")]),
    G(key="hot_retention", topic="observability", type="Fact",
      r=["Logs in the hot tier are kept for 7 days.",
         "Hot-tier log retention is seven days",
         "We keep hot tier logs for 7 days.",
         "7 days of retention for logs in the hot tier."]),
    # ---- cloud infrastructure ----------------------------------------------
    G(key="aws_region", topic="cloud infrastructure", type="Fact",
      r=["Our primary AWS region is eu-west-1.",
         "Most workloads run in eu-west-1 on AWS",
         "eu-west-1 is the main AWS region we use.",
         "The team's primary region in AWS: eu-west-1",
         "PRIMARY region = eu-west-1 (AWS)."],
      u=["The primary AWS region changed from eu-west-1 to eu-central-1.",
         "We changed our main AWS region to eu-central-1; it used to be eu-west-1."],
      la=[("entity", "Our disaster-recovery AWS region is eu-west-1.")]),
    G(key="iac_tool", topic="cloud infrastructure", type="Decision",
      r=["Infrastructure is managed with Terraform.",
         "We use Terraform for all infra-as-code",
         "terraform manages our infrastructure.",
         "All cloud infrastructure is defined in Terraform"],
      u=["We switched from Terraform to OpenTofu for infrastructure as code."]),
    # ---- continuous integration --------------------------------------------
    G(key="ci_provider", topic="continuous integration", type="Fact",
      r=["CI runs on GitHub Actions.",
         "Our continuous integration uses GitHub Actions",
         "GitHub Actions is the CI system.",
         "builds and tests run in github actions"],
      u=["CI moved from GitHub Actions to Buildkite.",
         "Our CI system is now Buildkite, not GitHub Actions."]),
    G(key="ci_duration", topic="continuous integration", type="Fact",
      r=["The full CI pipeline takes about 12 minutes.",
         "A complete CI run lasts roughly twelve minutes",
         "CI pipeline duration is ~12 min.",
         "It takes around 12 minutes for the whole pipeline to finish"],
      la=[("number", "The full CI pipeline takes about 20 minutes.")]),
    # ---- developer tooling -------------------------------------------------
    G(key="pkg_manager", topic="developer tooling", type="Preference",
      r=["User prefers pnpm over npm for JavaScript projects.",
         "For JS projects the user reaches for pnpm rather than npm",
         "pnpm, not npm, is the user's preferred JS package manager.",
         "The user likes using pnpm instead of npm in JavaScript repos"]),
    G(key="shell", topic="developer tooling", type="Preference",
      r=["User's default shell is zsh.",
         "The user works in zsh by default",
         "Default shell for the user: Zsh."],
      la=[("negation", "User's default shell is not zsh.")]),
    G(key="rebase", topic="developer tooling", type="Style",
      r=["User rebases feature branches instead of merging main into them.",
         "The user prefers rebasing onto main rather than merge commits",
         "rebase, don't merge: that's how the user updates feature branches.",
         "Feature branches get rebased on main by the user (no merge commits)."]),
    # ---- exercise / diet / sleep -------------------------------------------
    G(key="running", topic="exercise", type="Habit",
      r=["User runs 5 km every Saturday morning.",
         "Every Saturday morning the user goes for a 5k run",
         "Saturday mornings: 5 km run.",
         "the user does a five kilometre run on saturday mornings",
         "User's Saturday routine includes a 5K morning run."],
      u=["User stopped the Saturday 5 km runs and swims on Saturday mornings now."],
      la=[("number", "User runs 10 km every Saturday morning.")]),
    G(key="vegetarian", topic="diet", type="Preference",
      r=["User is vegetarian.",
         "The user doesn't eat meat; they're vegetarian.",
         "Vegetarian diet for the user",
         "user follows a vegetarian diet"],
      u=["User went from vegetarian to fully vegan in March."],
      upd_min=59),
    G(key="coffee", topic="diet", type="Habit",
      r=["User drinks two cups of coffee a day.",
         "The user has 2 coffees daily",
         "Coffee intake: 2 cups per day.",
         "Two cups of coffee each day is the user's norm"],
      u=["User cut back from two cups of coffee a day to just one."],
      la=[("entity", "User drinks two cups of tea a day.")]),
    G(key="bedtime", topic="sleep", type="Habit",
      r=["User goes to bed around 11 pm on weeknights.",
         "On weeknights the user is in bed by about 11pm",
         "weeknight bedtime is roughly 11 PM",
         "The user's usual weeknight bedtime: ~11 pm."],
      la=[("negation", "User does not go to bed around 11 pm on weeknights.")]),
    # ---- personal finance --------------------------------------------------
    G(key="rent", topic="personal finance", type="Fact",
      r=["User's rent is $1,850 per month.",
         "Monthly rent comes to 1850 dollars",
         "The user pays $1850 a month in rent.",
         "rent: $1,850/mo"],
      u=["The user's monthly rent is now $1,950, up from $1,850."]),
    G(key="index_fund", topic="personal finance", type="Decision",
      r=["User puts 15% of each paycheck into the index fund.",
         "15 percent of every paycheck goes into the index fund",
         "Each paycheck, the user invests fifteen percent in the index fund.",
         "Index fund contribution: 15% per paycheck."]),
    G(key="tax_return", topic="personal finance", type="Fact",
      r=["The 2025 tax return was filed on March 12.",
         "User filed the 2025 taxes on 12 March",
         "Tax return for 2025 went in on March 12th.",
         "The 2025 return was submitted March 12"],
      min_day=71,
      la=[("number", "The 2024 tax return was filed on March 12.")]),
    # ---- expense policy ----------------------------------------------------
    G(key="expense_threshold", topic="expense policy", type="Decision",
      r=["Expenses above $500 need manager approval.",
         "Any expense over 500 dollars must be approved by a manager",
         "Manager sign-off is required for expenses greater than $500.",
         "expenses > $500 need a manager's approval"],
      u=["The manager-approval threshold for expenses was raised from $500 to $1,000."]),
    # ---- travel ------------------------------------------------------------
    G(key="aisle_seat", topic="travel", type="Preference",
      r=["User prefers an aisle seat on flights.",
         "On planes the user wants the aisle",
         "Aisle seats, please: user's flight preference.",
         "The user always books aisle seats when flying",
         "user likes aisle seating on flights"],
      u=["User now prefers window seats on flights instead of the aisle."],
      la=[("entity", "User prefers an aisle seat on trains.")]),
    G(key="lisbon_trip", topic="travel", type="Context",
      r=["User is flying to Lisbon on May 14.",
         "On May 14 the user flies to Lisbon",
         "User's Lisbon flight is on 14 May.",
         "Trip: Lisbon, departing May 14"],
      old_max=95, upd_max=128,
      u=["User's Lisbon flight was rescheduled from May 14 to May 16."],
      la=[("entity", "User is flying to Porto on May 14.")]),
    G(key="hotel_walk", topic="travel", type="Preference",
      r=["User prefers hotels within walking distance of the venue.",
         "The user wants to stay somewhere walkable to the venue",
         "Hotel preference: walking distance to the event venue.",
         "the user likes booking hotels close enough to walk to the venue"],
      la=[("negation", "User does not prefer hotels within walking distance of the venue.")]),
    G(key="star_alliance", topic="travel", type="Fact",
      r=["User has Gold status with Star Alliance.",
         "user holds gold status in star alliance"]),
    # ---- on-call / documentation -------------------------------------------
    G(key="oncall_rotation", topic="on-call", type="Decision",
      r=["On-call rotation is one week per engineer.",
         "Each engineer is on call for a week at a time",
         "We rotate on-call weekly, one engineer per week.",
         "on-call shifts last 1 week per person"]),
    G(key="design_docs", topic="documentation", type="Decision",
      r=["Design docs live in Notion.",
         "We keep design documents in Notion",
         "Notion is where design docs are written",
         "All design docs are stored in notion."],
      u=["Design docs are no longer kept in Notion; they now live in the repo as Markdown.",
         "We stopped writing design docs in Notion and use Markdown files in the repo instead."]),
    # ---- public API --------------------------------------------------------
    G(key="api_v2_utc", topic="public api", type="Fact",
      r=["API v2 returns timestamps in UTC.",
         "Timestamps from the v2 API are in UTC",
         "The version 2 API gives all times in UTC.",
         "v2 of the API: UTC timestamps"],
      la=[("number", "API v3 returns timestamps in UTC."),
          ("negation", "API v2 does not return timestamps in UTC.")]),
    G(key="rate_limit", topic="public api", type="Fact",
      r=["The public API allows 100 requests per minute per key.",
         "Rate limit on the public API is 100 req/min per API key",
         "Each API key may make up to one hundred requests a minute on the public API.",
         "Per-key limit for the public API: 100 requests/minute."],
      u=["Public API rate limit changed from 100 to 300 requests per minute per key."],
      la=[("entity", "The internal API allows 100 requests per minute per key.")]),
    G(key="upload_cap", topic="public api", type="Fact",
      r=["Uploads are capped at 25 MB per file.",
         "Max file upload size is 25MB",
         "A single uploaded file can be at most 25 megabytes.",
         "25 MB is the per-file upload limit"],
      la=[("number", "Uploads are capped at 250 MB per file.")]),
    # ---- analytics ---------------------------------------------------------
    G(key="warehouse", topic="analytics", type="Decision",
      r=["Analytics data is stored in BigQuery.",
         "Our data warehouse is BigQuery",
         "BigQuery holds the analytics data",
         "We use Google BigQuery as the analytics warehouse."],
      u=["As of May, analytics data lives in Snowflake rather than BigQuery."],
      upd_min=120,
      la=[("entity", "Marketing data is stored in BigQuery.")]),
    G(key="dashboard_refresh", topic="analytics", type="Habit",
      r=["The revenue dashboard refreshes every night at 2 AM UTC.",
         "Nightly at 02:00 UTC the revenue dashboard is refreshed",
         "revenue dashboard refresh: daily, 2am UTC",
         "Every night at 2 a.m. UTC the revenue dashboard gets new data."],
      la=[("entity", "The churn dashboard refreshes every night at 2 AM UTC."),
          ("negation", "The revenue dashboard does not refresh every night at 2 AM UTC.")]),
    # ---- home --------------------------------------------------------------
    G(key="lease", topic="home", type="Context",
      r=["User's apartment lease renews on July 1.",
         "The lease on the user's apartment is up for renewal July 1st",
         "Apartment lease renewal date: 1 July.",
         "the user's lease renews on the first of July"]),
    G(key="plants", topic="home", type="Habit",
      r=["User waters the houseplants every Sunday.",
         "Houseplants get watered on Sundays",
         "Every Sunday the user waters the plants in the house."],
      la=[("negation", "User doesn't water the houseplants every Sunday.")]),
    # ---- language learning -------------------------------------------------
    G(key="spanish", topic="language learning", type="Habit",
      r=["User practices Spanish on Duolingo for 20 minutes a day.",
         "Twenty minutes of Spanish on Duolingo daily",
         "The user studies Spanish with Duolingo, 20 min each day.",
         "Daily Duolingo Spanish session: 20 minutes."],
      u=["User replaced Duolingo with weekly iTalki lessons for Spanish."],
      la=[("entity", "User practices Portuguese on Duolingo for 20 minutes a day.")]),
    # ---- communication preferences -----------------------------------------
    G(key="async_updates", topic="communication preferences", type="Preference",
      r=["User prefers async updates over meetings.",
         "The user would rather get written async updates than have meetings",
         "Async beats meetings, according to the user.",
         "user likes asynchronous updates more than meetings"],
      la=[("negation", "User does not prefer async updates over meetings.")]),
    G(key="bullets", topic="communication preferences", type="Style",
      r=["User wants answers in bullet points, not long paragraphs.",
         "Keep responses to the user as bullet lists rather than paragraphs",
         "Bullet points please; the user dislikes long paragraphs.",
         "The user prefers bulleted answers over lengthy prose"],
      u=["User no longer wants bullet points; short paragraphs are preferred now."]),
    # ---- product insights --------------------------------------------------
    G(key="early_churn", topic="product insights", type="Insight",
      r=["Most churned customers cancel within their first 30 days.",
         "The majority of churn happens in the first 30 days",
         "Churned customers mostly leave during the first thirty days.",
         "First 30 days = where most of our churn occurs"],
      la=[("number", "Most churned customers cancel within their first 90 days.")]),
    G(key="export_usage", topic="product insights", type="Insight",
      r=["Enterprise customers use the export feature far more than SMB customers.",
         "Export is used much more by enterprise accounts than by SMB ones",
         "Compared with enterprise customers, SMB customers rarely use export.",
         "Enterprise accounts are the heavy users of the export feature vs SMB"]),
    # ---- web infrastructure ------------------------------------------------
    G(key="session_store", topic="web infrastructure", type="Fact",
      r=["Redis is used as the session store.",
         "Sessions are stored in Redis",
         "The session store is Redis",
         "user sessions live in redis"],
      u=["Session storage was switched from Redis to DynamoDB."],
      la=[("entity", "Redis is used as the rate-limit store.")]),
    G(key="tls_certs", topic="web infrastructure", type="Fact",
      r=["TLS certificates are issued by Let's Encrypt.",
         "We get our TLS certs from Let's Encrypt",
         "Let's Encrypt issues the TLS certificates",
         "tls certs come from lets encrypt."],
      la=[("negation", "TLS certificates are not issued by Let's Encrypt.")]),
]

# ---------------------------------------------------------------------------
# Unrelated singletons: (type, content, topic). Each has its own fact,
# subject and topic; none shares a theme with any other memory.
# ---------------------------------------------------------------------------
UNRELATED = [
    ("Decision", "We decided to use Calendly for customer demo scheduling.", "demo scheduling"),
    ("Decision", "The company offsite will be held in Valencia this year.", "company offsite"),
    ("Decision", "The team agreed to use ULIDs for new order IDs.", "order id format"),
    ("Decision", "We will drop support for Internet Explorer 11 entirely.", "browser support"),
    ("Decision", "Decided to publish a yearly transparency report.", "transparency report"),
    ("Decision", "We decided to write the new CLI in Rust.", "cli implementation language"),
    ("Decision", "Approved a $300 monthly budget for team lunches.", "team lunches"),
    ("Decision", "Customer interviews will be recorded only with written consent.", "user research consent"),
    ("Decision", "Legal chose DocuSign for contract signatures.", "e-signatures"),
    ("Decision", "The marketing site will be rebuilt with Astro.", "marketing website"),
    ("Decision", "decided to localize the product into Japanese first", "localization"),
    ("Decision", "We will host a public status page on Statuspage.", "status page"),
    ("Decision", "User decided to buy a standing desk.", "ergonomics"),
    ("Decision", "User decided to take the AWS Solutions Architect exam in the fall.", "certification"),
    ("Decision", "User signed up for a pottery class on Wednesday evenings.", "hobbies"),
    ("Decision", "The team decided to name new services after rivers.", "service naming"),
    ("Decision", "Feature flags older than 90 days must be cleaned up, we decided.", "feature flag hygiene"),
    ("Decision", "Outside contributors must sign a CLA before their code is accepted.", "contributor license"),
    ("Decision", "Forum members have to accept the code of conduct before posting.", "community forum"),
    ("Decision", "User decided to adopt a cat from the local shelter.", "pets"),
    ("Decision", "The board approved a four-day work week pilot.", "work schedule"),
    ("Decision", "Decided to store user avatars in a separate S3 bucket.", "avatar storage"),
    ("Decision", "We'll sponsor the local JavaScript meetup.", "meetup sponsorship"),
    ("Decision", "The family decided to spend Christmas at the grandparents' house.", "holiday plans"),
    ("Decision", "Chose Mailgun for transactional email.", "transactional email"),
    ("Decision", "Each launch will be celebrated with a demo day.", "launch celebrations"),
    ("Decision", "Interview loops will include a paid take-home exercise.", "interview process"),
    ("Decision", "Accessibility audits are required before every major release.", "accessibility"),
    ("Decision", "All-hands meetings will be recorded for remote staff.", "all-hands"),
    ("Decision", "Engineers get MacBook Pros as their company laptops.", "hardware"),
    ("Decision", "The team picked Linear for issue tracking.", "issue tracking"),
    ("Decision", "User decided to read one book per month.", "reading"),
    ("Decision", "We decided against building a native Windows client.", "desktop client"),
    ("Fact", "The CEO's name is Priya Raman.", "leadership"),
    ("Fact", "The company's legal entity is registered in Delaware.", "incorporation"),
    ("Habit", "User volunteers at a food bank twice a month.", "volunteering"),
    ("Fact", "The design system is called Lumen.", "design system"),
    ("Insight", "Webinar attendance is highest at 11 AM Eastern.", "webinars"),
    ("Pattern", "Flaky tests usually come from shared temp directories.", "flaky tests"),
    ("Preference", "User likes jazz playlists while coding.", "music"),
    ("Habit", "User journals for ten minutes after lunch.", "journaling"),
    ("Style", "User wants SQL column names in snake_case.", "sql naming"),
    ("Fact", "The company's fiscal year starts in February.", "fiscal calendar"),
    ("Context", "User is preparing a talk for PyCon in May.", "conference talk"),
    ("Fact", "The company podcast is recorded every other Wednesday.", "podcast"),
    ("Insight", "Users who enable notifications retain about 20% better.", "notifications"),
    ("Pattern", "outages tend to follow config changes rather than code changes", "outage causes"),
    ("Preference", "User prefers metric units.", "units"),
    ("Habit", "User calls their parents every Sunday evening.", "family"),
    ("Fact", "User is allergic to penicillin.", "allergies"),
    ("Fact", "User's manager is Tomás Ortega.", "reporting line"),
    ("Style", "Documentation should be written in the second person.", "writing voice"),
    ("Fact", "The domain shopfront.io renews in November.", "domain names"),
    ("Insight", "Checkout conversion drops when the address form has more than 6 fields.", "checkout conversion"),
    ("Preference", "User prefers paper notebooks for brainstorming.", "brainstorming"),
    ("Fact", "The product mascot is a red panda named Miso.", "mascot"),
    ("Habit", "User clears their email inbox to zero every Friday.", "email habits"),
    ("Context", "User is on parental leave until mid-February.", "leave"),
    ("Pattern", "Prospects usually ask about SSO during security questionnaires.", "sales questions"),
    ("Fact", "The company has 140 employees.", "headcount"),
    ("Fact", "The user's car is a 2019 Honda Civic.", "car"),
    ("Insight", "Blog posts with code samples get twice the traffic.", "content marketing"),
    ("Style", "Slide decks should use the company's dark template.", "presentations"),
    ("Fact", "User's favorite bakery is on Elm Street.", "local places"),
]

# ---------------------------------------------------------------------------
# Contradiction pairs: (topic, type, stmt, other, mode, offset_days)
#   mode "earlier": `other` is update-style but dated offset_days BEFORE stmt
#   mode "same"   : both memories carry the identical timestamp
# ---------------------------------------------------------------------------
CONTRADICTIONS = [
    ("design review", "Decision", "Design reviews are held on Fridays.",
     "Design review was moved from Friday to Monday.", "earlier", 3),
    ("pizza", "Preference", "User's favorite pizza topping is mushrooms.",
     "User's favourite pizza topping is pineapple.", "same", 0),
    ("invoice currency", "Fact", "Customer invoices are issued in EUR.",
     "Customer invoices switched from EUR to USD.", "same", 0),
    ("cafeteria", "Fact", "The office cafeteria closes at 2 pm.",
     "The office cafeteria closes at 3 pm.", "same", 0),
    ("newsletter", "Decision", "The product newsletter is sent every Monday.",
     "The product newsletter no longer goes out on Mondays; it's sent on Tuesdays now.", "earlier", 5),
]


# ---------------------------------------------------------------------------
def norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def main() -> None:
    rng = random.Random(SEED)
    memories: list[dict] = []
    lab = {"fact": {}, "subject": {}, "topic": {}, "supersedes": [],
           "contradicts": [], "lookalike": [], "kind": {}}

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    def at(day: int) -> datetime:
        return BASE + timedelta(days=day, hours=rng.randint(7, 21),
                                minutes=rng.randint(0, 59), seconds=rng.randint(0, 59))

    def vary(text: str) -> str:
        """Light surface noise (casing / trailing punctuation) like a real store."""
        p = rng.random()
        if p < 0.10:
            return text.lower()
        if p < 0.20:
            return text.rstrip(".")
        if p < 0.25 and not text.endswith((".", "!")):
            return text + "."
        return text

    def add(content, mtype, ts, fact, subject, topic, kind):
        mid = new_id()
        memories.append({
            "id": mid, "content": content, "type": mtype,
            "timestamp": ts.isoformat(),
            "importance": round(rng.uniform(0.3, 0.95), 2),
            "confidence": round(rng.uniform(0.55, 1.0), 2),
            "access_count": rng.randint(0, 25),
            "tags": ["holdout"],
        })
        lab["fact"][mid] = fact
        lab["subject"][mid] = subject
        lab["topic"][mid] = topic
        lab["kind"][mid] = kind
        return mid, ts

    # ---- fact groups, updates, look-alikes --------------------------------
    for gi, g in enumerate(GROUPS, 1):
        fid, sid = f"F{gi:03d}", f"S{gi:03d}"
        n = len(g["r"])
        has_upd = bool(g.get("u"))
        lo_min = g.get("min_day", 0)
        cap = g.get("old_max", 125 if has_upd else 180)
        window = rng.randint(n * 4, n * 10)
        lo = rng.randint(lo_min, max(lo_min, cap - window))
        hi = min(lo + window, cap + 1)
        days = sorted(rng.sample(range(lo, hi), n))
        old = []
        for i, (d, text) in enumerate(zip(days, g["r"])):
            old.append(add(text if i == 0 else vary(text), g["type"], at(d),
                           fid, sid, g["topic"], "restatement"))
        old_ids = [m for m, _ in old]
        last_old = max(t for _, t in old)

        if has_upd:
            ufid = f"{fid}-U"
            t = last_old + timedelta(days=rng.randint(2, 15), hours=rng.randint(0, 6))
            if "upd_min" in g:
                t = max(t, BASE + timedelta(days=g["upd_min"], hours=rng.randint(8, 18)))
            upd_max = BASE + timedelta(days=g.get("upd_max", 178))
            assert t <= upd_max, g["key"]
            for j, text in enumerate(g["u"]):
                if j:
                    t = t + timedelta(days=rng.randint(1, 10), hours=rng.randint(0, 5))
                    text = vary(text)
                assert t <= END
                uid, _ = add(text, g["type"], t, ufid, sid, g["topic"], "update")
                lab["supersedes"].extend([uid, o] for o in old_ids)

        for k, (cat, text) in enumerate(g.get("la", []), 1):
            lid, _ = add(text, g["type"], at(rng.randint(0, 178)),
                         f"{fid}-L{k}", f"{sid}-L{k}", g["topic"], "lookalike")
            lab["lookalike"].extend([lid, o] for o in old_ids)
            lab.setdefault("_lookalike_category", {})[lid] = cat

    # ---- unrelated singletons ---------------------------------------------
    for ui, (mtype, text, topic) in enumerate(UNRELATED, 1):
        add(text, mtype, at(rng.randint(0, 180)), f"U{ui:03d}", f"SU{ui:03d}",
            topic, "unrelated")

    # ---- contradictions ---------------------------------------------------
    for ci, (topic, mtype, a, b, mode, off) in enumerate(CONTRADICTIONS, 1):
        ta = at(rng.randint(15, 170))
        tb = ta - timedelta(days=off, hours=rng.randint(0, 4)) if mode == "earlier" else ta
        ida, _ = add(a, mtype, ta, f"C{ci}-a", f"SC{ci}", topic, "contradiction")
        idb, _ = add(b, mtype, tb, f"C{ci}-b", f"SC{ci}", topic, "contradiction")
        lab["contradicts"].append([ida, idb])

    # ---- validation -------------------------------------------------------
    ids = {m["id"] for m in memories}
    byid = {m["id"]: m for m in memories}
    assert len(ids) == len(memories)
    for key in ("fact", "subject", "topic", "kind"):
        assert set(lab[key]) == ids, key
    for key in ("supersedes", "contradicts", "lookalike"):
        for a, b in lab[key]:
            assert a in ids and b in ids and a != b, key
    ts = lambda i: datetime.fromisoformat(byid[i]["timestamp"])  # noqa: E731
    for new, old in lab["supersedes"]:
        assert ts(new) - ts(old) >= timedelta(days=2)
        assert lab["subject"][new] == lab["subject"][old]
        assert lab["fact"][new] != lab["fact"][old]
    for a, b in lab["contradicts"]:
        assert lab["subject"][a] == lab["subject"][b] and ts(b) <= ts(a)
    for la, orig in lab["lookalike"]:
        assert lab["subject"][la] != lab["subject"][orig]
    by_fact = defaultdict(list)
    for m in memories:
        by_fact[lab["fact"][m["id"]]].append(m)
    for f, ms in by_fact.items():
        assert len({m["type"] for m in ms}) == 1, f
    seen = {}
    for m in memories:
        k = norm(m["content"])
        assert k not in seen, (m["content"], seen.get(k))
        seen[k] = m["content"]
    for m in memories:
        assert BASE <= ts(m["id"]) <= END
    assert len(memories) >= 350

    # ---- write ------------------------------------------------------------
    memories.sort(key=lambda m: (m["timestamp"], m["id"]))
    la_cat = lab.pop("_lookalike_category")
    with open(OUT / "holdout.jsonl", "w", encoding="utf-8") as fh:
        for m in memories:
            fh.write(json.dumps(m, ensure_ascii=False) + "\n")
    with open(OUT / "holdout_labels.json", "w", encoding="utf-8") as fh:
        json.dump(lab, fh, ensure_ascii=False, indent=1)

    kinds = Counter(lab["kind"].values())
    ucount = Counter(m["type"] for m in memories if lab["kind"][m["id"]] == "unrelated")
    cats = Counter(la_cat.values())
    n_update_facts = len({lab["fact"][i] for i, k in lab["kind"].items() if k == "update"})
    n_groups = len(GROUPS)
    sizes = Counter(len(g["r"]) for g in GROUPS)

    write_readme(memories, lab, kinds, ucount, cats, n_update_facts, n_groups, sizes, rng)

    print(f"memories: {len(memories)}")
    for k in ("restatement", "update", "lookalike", "unrelated", "contradiction"):
        print(f"  {k:13s} {kinds[k]}")
    print(f"fact groups: {n_groups} (sizes {dict(sorted(sizes.items()))}); "
          f"update facts: {n_update_facts}; look-alike categories: {dict(cats)}; "
          f"unrelated Decisions: {ucount['Decision']}")
    print(f"label pairs: supersedes={len(lab['supersedes'])} "
          f"contradicts={len(lab['contradicts'])} lookalike={len(lab['lookalike'])}")
    print("all referenced ids exist: OK")


def write_readme(memories, lab, kinds, ucount, cats, n_update_facts, n_groups, sizes, rng):
    lines = [
        "# Held-out memory-hygiene test set",
        "",
        "Generated by `make_holdout.py` (stdlib only, fixed seed "
        f"`{SEED}`): `python3 make_holdout.py` rewrites `holdout.jsonl`, "
        "`holdout_labels.json` and this README. All sentences are hand-written in the "
        "script and independent of the detection rules. The script only adds light "
        "random casing/punctuation noise to some restatements.",
        "",
        "## How it is built",
        f"- **Fact groups** ({n_groups}, sizes {dict(sorted(sizes.items()))}): one fact "
        "restated 2 to 6 times in different wording, spread over days. All memories in a group "
        "share `fact`, `subject` and `type` (kind `restatement`).",
        f"- **Updates** ({n_update_facts} new facts, some restated twice): same `subject` as the "
        "group, new `fact`, dated at least 2 days after every memory of the old fact. Each update "
        "memory supersedes every memory of the old fact (`supersedes` = [newer, older]).",
        "- **Look-alikes**: a copy of one restatement with exactly one entity, one number, or a "
        "negation changed, and no change wording. Each has its own `fact` and `subject` but the "
        "group's `topic`. `lookalike` pairs it with **every** memory of the original fact. Never "
        "merge, supersede, or contradict these.",
        "- **Unrelated**: singletons, each with its own fact, subject and topic.",
        "- **Contradictions**: pairs sharing a `subject`: either an update-style memory dated "
        "before the statement it changes, or two conflicting statements with identical "
        "timestamps. `contradicts` = [statement, other].",
        "- `topic`: a broad theme. Several groups share a topic (e.g. `deployment`, "
        "`editor preferences`), so same topic means thematically related.",
        "",
        "## Counts",
        f"- memories: {len(memories)}",
    ]
    for k in ("restatement", "update", "lookalike", "unrelated", "contradiction"):
        lines.append(f"- {k}: {kinds[k]}")
    lines += [
        f"- look-alike categories: {dict(cats)}",
        f"- unrelated by type: {dict(ucount)}",
        f"- label pairs: supersedes {len(lab['supersedes'])}, contradicts "
        f"{len(lab['contradicts'])}, lookalike {len(lab['lookalike'])}",
        "",
        "## Examples (10 per kind)",
    ]
    ex_rng = random.Random(SEED + 1)
    byid = {m["id"]: m for m in memories}
    for k in ("restatement", "update", "lookalike", "unrelated", "contradiction"):
        rows = [m for m in memories if lab["kind"][m["id"]] == k]
        if k == "restatement":
            # show whole groups so restatements are visible side by side
            facts = sorted({lab["fact"][m["id"]] for m in rows})
            pick = ex_rng.sample(facts, 3)
            rows = [m for m in rows if lab["fact"][m["id"]] in pick][:10]
        elif len(rows) > 10:
            rows = sorted(ex_rng.sample(rows, 10), key=lambda m: m["timestamp"])
        lines += ["", f"### {k}", "", "| timestamp | type | fact | subject | topic | content |",
                  "|---|---|---|---|---|---|"]
        for m in sorted(rows, key=lambda m: (lab["fact"][m["id"]], m["timestamp"])):
            i = m["id"]
            content = m["content"]
            ref = {"lookalike": lab["lookalike"], "update": lab["supersedes"]}.get(k)
            if ref:
                orig = next(b for a, b in ref if a == i)
                content += f"  (vs: {byid[orig]['content']})"
            content = content.replace("|", "\\|")
            lines.append(f"| {m['timestamp'][:16]} | {m['type']} | {lab['fact'][i]} | "
                         f"{lab['subject'][i]} | {lab['topic'][i]} | {content} |")
    (OUT / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generate the second, independent held-out memory-hygiene test set.

Deterministic (fixed seed). Writes, next to this file:
  holdout.jsonl         one memory per line
  holdout_labels.json   ground-truth labels
  README.md             description, counts, example rows

Standard library only (Python 3.10+). Every sentence below was written by hand
for this file, without looking at the detection rules under consolidation/.
"""
from __future__ import annotations

import json
import random
import re
import uuid
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

SEED = 41729
TAG = "holdout2"
OUT = Path(__file__).resolve().parent
BASE = datetime(2026, 1, 1, tzinfo=timezone.utc)
END = datetime(2026, 7, 31, 23, 59, 59, tzinfo=timezone.utc)
LAST_DAY = 211  # 2026-07-31

# ---------------------------------------------------------------------------
# Fact groups.
#   r    : restatements of one fact (same value, different wording)
#   u    : optional update: phrasings of ONE new fact that replaces the old one
#          and says so; dated >= 2 days after every restatement
#   la   : look-alikes (category, text): a copy of one restatement with exactly
#          one thing changed, making it a different fact; no change wording
#   hi   : optional last day (0 = Jan 1) for the restatements
#   umax : optional last day for the update
# ---------------------------------------------------------------------------
GROUPS = [
    dict(key="orders-db", type="Fact", topic="databases",
         r=["The orders database runs on PostgreSQL 15.",
            "Postgres 15 is what the orders DB uses.",
            "Orders DB: PostgreSQL version fifteen.",
            "The user mentioned that the orders database is currently on Postgres 15.",
            "The orders DB is a Postgres 15 instance."],
         la=[("entity", "The billing database runs on PostgreSQL 15.")],
         u=["The orders database was upgraded from PostgreSQL 15 to 16.",
            "Orders DB is now on Postgres 16 instead of 15."]),
    dict(key="platform-sync", type="Habit", topic="team meetings",
         r=["The platform team's weekly sync starts at 9:15 am on Mondays.",
            "Weekly sync for the platform team begins Mondays at 09:15.",
            "Every Monday at quarter past nine, the platform team holds its weekly sync.",
            "Note: platform weekly sync is Mon 9:15.",
            "On Monday mornings the platform group gets together for its weekly sync at 9.15."],
         la=[("time", "The platform team's weekly sync starts at 9:45 am on Mondays.")]),
    dict(key="denver-flight", type="Context", topic="travel", hi=92, umax=100,
         r=["The user flies from Boston to Denver on April 12.",
            "On 12 April the user has a flight Boston -> Denver.",
            "Flight BOS to DEN for the user on 4/12.",
            "User's flight on April 12th goes from Boston to Denver."],
         la=[("relation side", "The user flies from Denver to Boston on April 12.")],
         u=["The user's Boston to Denver flight was rebooked from April 12 to April 13."]),
    dict(key="tea-coffee", type="Preference", topic="food and drink",
         r=["The user prefers tea over coffee in the afternoon.",
            "In the afternoons, the user would rather have tea than coffee.",
            "Afternoon drink preference: tea, not coffee."],
         la=[("relation side", "The user prefers coffee over tea in the afternoon.")]),
    dict(key="tree-nuts", type="Fact", topic="health",
         r=["The user is allergic to tree nuts.",
            "Tree-nut allergy: the user has one.",
            "User has a known allergy to tree nuts such as walnuts and cashews.",
            "The user mentioned that tree nuts give them an allergic reaction.",
            "Note: keep tree nuts away from the user; they're allergic.",
            "Allergies (user): tree nuts."],
         la=[("entity", "The user is allergic to sesame.")]),
    dict(key="maya-birthday", type="Fact", topic="family",
         r=["The user's daughter Maya was born on June 8.",
            "Maya, the user's daughter, has her birthday on 8 June.",
            "Birthday of the user's daughter Maya: 6/8.",
            "June 8th is Maya's birthday (the user's daughter).",
            "Maya (daughter) turns a year older every 8th of June."],
         la=[("date", "The user's daughter Maya was born on July 8.")]),
    dict(key="car-insurance", type="Fact", topic="personal finance",
         r=["The user's car insurance premium is $1,140 per year.",
            "Car insurance costs the user 1140 dollars a year.",
            "Annual vehicle insurance premium: $1,140.",
            "The user pays $1,140 annually to insure the car."],
         la=[("entity", "The user's home insurance premium is $1,140 per year.")],
         u=["The user switched car insurers; the premium is now $980 a year instead of $1,140."]),
    dict(key="notes-app", type="Preference", topic="note taking",
         r=["The user writes personal notes in Obsidian.",
            "Obsidian is the app the user picks for personal notes.",
            "For personal notes, the user usually relies on Obsidian."],
         la=[("qualifier", "The user writes meeting notes in Obsidian.")],
         u=["The user moved their personal notes from Obsidian to Logseq."]),
    dict(key="staging-nodes", type="Fact", topic="kubernetes",
         r=["The staging k8s cluster has 6 worker nodes.",
            "Six worker nodes make up the staging Kubernetes cluster.",
            "Staging cluster (k8s): 6 workers.",
            "There are currently six worker nodes in the staging Kubernetes cluster."],
         la=[("qualifier", "The production k8s cluster has 6 worker nodes.")],
         u=["The staging k8s cluster was scaled from 6 to 10 worker nodes.",
            "Staging Kubernetes now runs ten worker nodes, up from six."]),
    dict(key="swim-days", type="Habit", topic="exercise",
         r=["The user goes swimming on Tuesday and Thursday mornings.",
            "Tuesday and Thursday mornings are the user's swim days.",
            "User swims Tue/Thu mornings.",
            "On Tuesdays and Thursdays the user usually swims in the morning."],
         la=[("weekday", "The user goes swimming on Monday and Thursday mornings.")],
         u=["The user no longer swims on Tuesday and Thursday mornings; they go on Saturday mornings now."]),
    dict(key="mobile-beta", type="Decision", topic="project planning", hi=100, umax=120,
         r=["The mobile app beta launches on May 5.",
            "Beta launch for the mobile app is set for 5 May.",
            "The mobile app's beta is scheduled to begin 5/5.",
            "Launch date of the mobile app beta: May 5th."],
         la=[("qualifier", "The web app beta launches on May 5.")],
         u=["The mobile app beta launch was pushed from May 5 to May 19.",
            "Mobile beta now launches May 19 instead of May 5."]),
    dict(key="bulkhead", type="Preference", topic="travel",
         r=["The user books a bulkhead row when flying with the kids.",
            "When the kids come along on a flight, the user picks bulkhead seats.",
            "Flights with the children: bulkhead row, per the user."],
         la=[("qualifier", "The user books a bulkhead row when flying alone.")]),
    dict(key="router", type="Fact", topic="home",
         r=["The home router is in the hallway closet.",
            "The router at home sits in the hallway closet.",
            "Home router location: hall closet.",
            "The user keeps the home Wi-Fi router in the closet in the hallway."]),
    dict(key="biscuit-meals", type="Fact", topic="pets",
         r=["The user's dog Biscuit eats twice a day.",
            "Biscuit, the user's dog, is fed two times daily.",
            "The dog (Biscuit) gets 2 meals a day."],
         la=[("number", "The user's dog Biscuit eats three times a day.")],
         u=["Biscuit now gets one meal a day instead of two, on the vet's advice."]),
    dict(key="dentist", type="Context", topic="health", hi=48, umax=58,
         r=["The user's dentist appointment is on March 3 at 2pm.",
            "Dentist: 3 March, 14:00.",
            "The user sees the dentist on 3/3 at 2 in the afternoon.",
            "The user has a dental appointment March 3rd at 2:00 pm."],
         la=[("time", "The user's dentist appointment is on March 3 at 4pm.")],
         u=["The dentist appointment was moved from March 3 to March 10, still at 2pm."]),
    dict(key="payments-approvals", type="Decision", topic="code review",
         r=["Pull requests to the payments repo need two approvals.",
            "Two approvals are required before a PR in the payments repo can merge.",
            "Payments repo: PRs need 2 approving reviews.",
            "In the payments repository, every pull request must be approved by two reviewers.",
            "Merging into payments requires 2 approvals on the pull request."],
         la=[("entity", "Pull requests to the docs repo need two approvals.")]),
    dict(key="backend-ci", type="Fact", topic="ci/cd",
         r=["The backend's CI pipeline runs on Jenkins.",
            "Jenkins runs the CI for the backend.",
            "Backend CI is currently hosted on a Jenkins server."],
         la=[("entity", "The frontend's CI pipeline runs on Jenkins.")],
         u=["Backend CI was migrated from Jenkins to GitLab CI.",
            "The backend pipeline now runs on GitLab CI instead of Jenkins."]),
    dict(key="bedtime", type="Habit", topic="sleep",
         r=["The user usually goes to bed around 11 pm.",
            "Bedtime for the user is typically 23:00.",
            "The user tends to be asleep by eleven at night."],
         la=[("time", "The user usually goes to bed around 1 am.")],
         u=["The user has started going to bed at 10 pm instead of 11."]),
    dict(key="mother-city", type="Fact", topic="family",
         r=["The user's mother lives in Tucson.",
            "The user's mom lives in Tucson.",
            "Tucson is where the user's mother lives.",
            "User's mother: based in Tucson, AZ."],
         la=[("entity", "The user's mother lives in Phoenix.")],
         u=["The user's mother moved from Tucson to San Diego."]),
    dict(key="office-vpn", type="Fact", topic="networking",
         r=["The office VPN uses WireGuard.",
            "WireGuard is the protocol behind the office VPN.",
            "Office VPN: WireGuard-based."],
         la=[("qualifier", "The home VPN uses WireGuard.")]),
    dict(key="written-proposals", type="Preference", topic="communication",
         r=["The user prefers written design proposals over live brainstorming sessions.",
            "Rather than live brainstorming, the user likes to get a written design proposal.",
            "Written design proposals work better for the user than live brainstorming."],
         la=[("relation side", "The user prefers live brainstorming sessions over written design proposals.")]),
    dict(key="oil-change", type="Fact", topic="car",
         r=["The user's car is due for an oil change every 5,000 miles.",
            "Oil change interval for the user's vehicle: 5000 mi.",
            "Every five thousand miles the user's car needs an oil change."],
         la=[("unit", "The user's car is due for an oil change every 5,000 kilometers.")]),
    dict(key="wfh-days", type="Context", topic="work schedule",
         r=["The user works from home on Mondays and Fridays.",
            "Mondays and Fridays are the user's WFH days.",
            "The user is remote on Mon and Fri.",
            "On Monday and Friday the user usually works from home."],
         la=[("weekday", "The user works from home on Mondays and Wednesdays.")],
         u=["The user now works from home only on Fridays; Mondays are back in the office.",
            "As of this month the user's only WFH day is Friday, no longer Monday."]),
    dict(key="prod-alerts", type="Fact", topic="monitoring",
         r=["Alerts from production go to the #ops-alerts channel.",
            "Production alerts are posted in #ops-alerts.",
            "#ops-alerts receives the prod alerting notifications."],
         la=[("qualifier", "Alerts from staging go to the #ops-alerts channel.")],
         u=["Production alerts were moved from #ops-alerts to #incident-feed."]),
    dict(key="grpc", type="Decision", topic="architecture",
         r=["The team chose gRPC for communication between internal services.",
            "Internal services talk to each other over gRPC, the team decided.",
            "Decision: service-to-service calls use gRPC.",
            "gRPC was picked as the protocol for internal service communication."],
         la=[("qualifier", "The team chose gRPC for communication with external partners.")]),
    dict(key="payday", type="Fact", topic="personal finance",
         r=["The user's salary is paid on the 25th of each month.",
            "Payday for the user falls on the 25th every month.",
            "User gets paid monthly on the 25th."],
         la=[("number", "The user's salary is paid on the 15th of each month.")],
         u=["The user's payday changed from the 25th to the last business day of the month."]),
    dict(key="bedtime-reading", type="Habit", topic="reading",
         r=["The user reads for 30 minutes before bed.",
            "Before sleeping, the user reads for half an hour.",
            "User habit: thirty minutes of reading at bedtime."],
         la=[("number", "The user reads for 60 minutes before bed.")]),
    dict(key="backup-retention", type="Fact", topic="backups",
         r=["Database backups are kept for 30 days.",
            "We retain DB backups for thirty days.",
            "Backup retention for databases: 30 days.",
            "Database backups are currently stored for 30 days before deletion."],
         la=[("entity", "Log archives are kept for 30 days.")],
         u=["DB backup retention changed from 30 to 90 days."]),
    dict(key="commit-mood", type="Style", topic="writing style",
         r=["The user wants commit messages written in the imperative mood.",
            "Commit messages should use the imperative mood, per the user.",
            "Style rule: imperative mood in commit messages."]),
    dict(key="summary-first", type="Style", topic="writing style",
         r=["The user likes answers to start with a short summary.",
            "Start replies with a brief summary; the user prefers that.",
            "User preference for responses: lead with a concise summary."],
         la=[("negation", "The user does not like answers to start with a short summary.")]),
    dict(key="lease-end", type="Fact", topic="housing",
         r=["The user's lease ends on August 31.",
            "The apartment lease runs out 31 August."]),
    dict(key="prod-ingress", type="Fact", topic="kubernetes",
         r=["The ingress controller in production is ingress-nginx.",
            "Production uses ingress-nginx as its ingress controller.",
            "Prod ingress: the NGINX ingress controller."],
         la=[("qualifier", "The ingress controller in staging is ingress-nginx.")],
         u=["Production replaced ingress-nginx with Traefik as the ingress controller."]),
    dict(key="brother-call", type="Habit", topic="family",
         r=["The user video-calls their brother Theo every Saturday morning.",
            "Every Saturday morning, the user has a video call with Theo, their brother.",
            "Saturday mornings: the user's weekly video chat with brother Theo.",
            "The user usually FaceTimes their brother Theo on Saturday mornings."],
         la=[("weekday", "The user video-calls their brother Theo every Friday morning.")]),
    dict(key="passport", type="Fact", topic="travel",
         r=["The user's passport expires in November 2027.",
            "Passport expiry: Nov 2027.",
            "The user's passport is valid until November 2027."],
         la=[("number", "The user's passport expires in November 2029.")],
         u=["The user renewed the passport; it now expires in 2036 rather than November 2027."]),
    dict(key="sprint-demo", type="Decision", topic="team process",
         r=["Sprint demos are held every other Wednesday.",
            "Every second Wednesday the team holds its sprint demo.",
            "Sprint demo: biweekly, Wednesdays.",
            "The team usually demos sprint work on alternate Wednesdays."],
         la=[("weekday", "Sprint demos are held every other Thursday.")],
         u=["Sprint demos moved from Wednesdays to Friday afternoons."]),
    dict(key="site-region", type="Fact", topic="cloud infrastructure",
         r=["The main website is hosted in AWS us-east-1.",
            "us-east-1 is the AWS region hosting the main website.",
            "Main site: AWS, us-east-1."],
         la=[("entity", "The marketing blog is hosted in AWS us-east-1.")],
         u=["The main website moved from us-east-1 to us-west-2.",
            "Main site hosting region is now us-west-2 (it used to be us-east-1)."]),
    dict(key="lactose", type="Fact", topic="diet",
         r=["The user is lactose intolerant but can eat hard cheese.",
            "Lactose intolerance: yes, though aged hard cheeses are OK for the user.",
            "Milk doesn't agree with the user, but hard cheese is fine."],
         la=[("negation", "The user is lactose intolerant and cannot eat hard cheese.")]),
    dict(key="data-lead", type="Fact", topic="team",
         r=["Priya leads the data platform team.",
            "The data platform team is led by Priya.",
            "Priya is the lead of data platform.",
            "Data platform team lead: Priya."],
         la=[("entity", "Priya leads the security team.")],
         u=["Priya handed the data platform lead role to Marcus; Marcus is the lead now."]),
    dict(key="figma", type="Fact", topic="design tools",
         r=["The design team keeps its files in Figma.",
            "Figma is where the design team stores its files."]),
    dict(key="morning-yoga", type="Habit", topic="exercise",
         r=["The user does yoga for 20 minutes after waking up.",
            "After waking up, the user does twenty minutes of yoga.",
            "Morning routine: 20 min yoga right after getting up."],
         la=[("number", "The user does yoga for 40 minutes after waking up.")],
         u=["The user swapped the morning yoga for a 20-minute walk."]),
    dict(key="emergency-fund", type="Fact", topic="personal finance",
         r=["The user's emergency fund holds six months of expenses.",
            "Six months of expenses are set aside in the user's emergency fund.",
            "Emergency fund: covers 6 months of the user's spending."],
         la=[("number", "The user's emergency fund holds three months of expenses.")]),
    dict(key="berlin-conf", type="Context", topic="travel", hi=150,
         r=["The user will be at a conference in Berlin from 9 to 11 June.",
            "June 9-11: user is in Berlin for a conference.",
            "The user attends a conference in Berlin, June 9 through 11."],
         la=[("entity", "The user will be at a conference in Munich from 9 to 11 June.")]),
    dict(key="ssh-key", type="Fact", topic="security",
         r=["SSH access to production servers requires a hardware key.",
            "A hardware security key is needed to SSH into prod servers.",
            "Prod servers: SSH only with a hardware key."],
         la=[("negation", "SSH access to production servers does not require a hardware key.")]),
    dict(key="ts-strict", type="Decision", topic="frontend",
         r=["The frontend team decided to use TypeScript strict mode.",
            "Strict mode is enabled for TypeScript in the frontend, by team decision."]),
    dict(key="thermostat", type="Fact", topic="home",
         r=["The user's thermostat is set to 20°C during the day.",
            "Daytime thermostat setting at the user's home: 20 °C.",
            "During the day, the heating is set to twenty degrees Celsius."],
         la=[("qualifier", "The user's thermostat is set to 20°C during the night.")],
         u=["The user lowered the daytime thermostat from 20°C to 19°C to save on heating."]),
    dict(key="school-end", type="Fact", topic="school",
         r=["The kids' school day ends at 3:10 pm.",
            "School lets out at 15:10 for the user's kids.",
            "The user's children finish school at ten past three."],
         la=[("time", "The kids' school day ends at 3:40 pm.")]),
    dict(key="lofi", type="Preference", topic="music",
         r=["The user listens to lo-fi music while working.",
            "While working, the user usually puts on lo-fi music.",
            "Work soundtrack for the user: lo-fi beats."],
         la=[("qualifier", "The user listens to lo-fi music while running.")]),
    dict(key="warehouse", type="Fact", topic="data warehouse",
         r=["The analytics warehouse is Amazon Redshift.",
            "Redshift serves as the company's analytics store.",
            "Analytics DWH: Redshift (AWS).",
            "The company's analytics data currently sits in an Amazon Redshift cluster."],
         u=["The analytics warehouse was replaced: ClickHouse instead of Redshift.",
            "Analytics data moved off Redshift and onto ClickHouse."]),
    dict(key="half-marathon", type="Context", topic="running",
         r=["The user is training for a half marathon in October.",
            "In October, the user will run a half marathon and is training for it.",
            "Half marathon in Oct: user is in training."]),
    dict(key="cat-vet", type="Fact", topic="pets",
         r=["The cat's vet is Dr. Alvarez at Oakwood Clinic.",
            "Dr. Alvarez (Oakwood Clinic) is the vet for the user's cat.",
            "Cat vet: Dr Alvarez, Oakwood."],
         u=["The cat now sees Dr. Kim at Riverside Animal Hospital instead of Dr. Alvarez."]),
    dict(key="netflix", type="Fact", topic="subscriptions",
         r=["The user pays $15.49 a month for Netflix.",
            "Netflix costs the user 15.49 dollars monthly.",
            "Netflix subscription: $15.49/month."],
         la=[("number", "The user pays $17.49 a month for Netflix.")],
         u=["Netflix went up from $15.49 to $17.99 a month for the user."]),
    dict(key="ios-submission", type="Decision", topic="mobile releases",
         r=["The iOS app is submitted for App Store review on Mondays.",
            "Monday is App Store submission day for the iOS app.",
            "iOS submissions to the App Store go out Mon.",
            "We send the iOS build to App Store review every Monday."],
         la=[("weekday", "The iOS app is submitted for App Store review on Fridays.")],
         u=["iOS App Store submissions are no longer tied to Mondays; the team submits whenever a release branch is cut."]),
    dict(key="car-model", type="Fact", topic="car",
         r=["The user drives a blue Subaru Outback.",
            "The user's vehicle is a Subaru Outback in blue.",
            "Car: blue Outback (Subaru)."],
         la=[("entity", "The user drives a green Subaru Outback.")],
         u=["The user sold the Subaru Outback and now drives a Tesla Model 3.",
            "The user's car was replaced by a Tesla Model 3; the Outback is gone."]),
    dict(key="budget-review", type="Habit", topic="personal finance",
         r=["The user reviews their budget on the first Sunday of each month.",
            "On the first Sunday of every month the user goes over the budget.",
            "Monthly budget review: 1st Sunday."],
         la=[("ordinal", "The user reviews their budget on the last Sunday of each month.")]),
    dict(key="trace-sampling", type="Fact", topic="observability",
         r=["Traces are sampled at 10 percent in production.",
            "Production tracing uses a 10% sample rate.",
            "In prod, one in ten traces is kept.",
            "Trace sampling (prod): 10%."],
         la=[("number", "Traces are sampled at 1 percent in production.")],
         u=["Trace sampling in production was lowered from 10% to 5%."]),
    dict(key="quiet-hours", type="Preference", topic="notifications",
         r=["The user doesn't want notifications after 7 pm.",
            "No notifications for the user after 19:00, please.",
            "After seven in the evening, the user prefers not to be notified."],
         la=[("time", "The user doesn't want notifications after 9 pm.")]),
    dict(key="piano", type="Fact", topic="kids activities",
         r=["The user's son takes piano lessons on Wednesdays at 4:30.",
            "Piano lessons for the user's son are Wednesday, 16:30.",
            "On Wednesdays at half past four, the user's son has piano."],
         la=[("entity", "The user's son takes guitar lessons on Wednesdays at 4:30.")],
         u=["The son's piano lesson moved from Wednesday to Thursday, same time."]),
    dict(key="dns", type="Fact", topic="cloud infrastructure",
         r=["DNS for the company's domains is managed in Cloudflare.",
            "Cloudflare manages DNS for the company's domains.",
            "Company domain DNS: Cloudflare."],
         u=["DNS for company domains moved from Cloudflare to Route 53."]),
    dict(key="monday-tickets", type="Insight", topic="customer support",
         r=["Most support tickets come in on Monday mornings.",
            "Monday mornings bring the largest share of support tickets.",
            "Support ticket volume peaks Monday AM."],
         la=[("weekday", "Most support tickets come in on Tuesday mornings.")]),
    dict(key="deep-work", type="Pattern", topic="productivity",
         r=["The user tends to schedule deep work before lunch.",
            "Deep work usually happens before lunch for the user.",
            "The user's focused work blocks are typically in the morning, before lunch."],
         la=[("relation side", "The user tends to schedule deep work after lunch.")]),
    dict(key="vitamin-d", type="Habit", topic="health",
         r=["The user takes vitamin D every morning.",
            "Every morning the user takes a vitamin D supplement.",
            "Vitamin D: daily, mornings."]),
    dict(key="password-manager", type="Fact", topic="tools",
         r=["The team's password manager is 1Password.",
            "1Password is the password manager the team uses.",
            "Team password vault: 1Password."],
         u=["The team moved from 1Password to Bitwarden.",
            "Team passwords now live in Bitwarden; 1Password is no longer used."]),
    dict(key="billing-rewrite", type="Context", topic="projects",
         r=["The user is rewriting the billing service in Go.",
            "Billing service rewrite in Go is what the user is working on.",
            "The billing service is being rewritten in Go by the user.",
            "Current project: rewrite of the billing service (Go)."],
         la=[("entity", "The user is rewriting the notification service in Go.")],
         u=["The billing rewrite is finished; the user has moved on to the search service."]),
    dict(key="in-laws", type="Fact", topic="family",
         r=["The user's in-laws visit every Thanksgiving.",
            "Every Thanksgiving, the user's in-laws come to visit."],
         la=[("date", "The user's in-laws visit every Christmas.")]),
    dict(key="precheck", type="Fact", topic="travel",
         r=["The user has TSA PreCheck.",
            "The user is enrolled in TSA PreCheck."],
         la=[("negation", "The user does not have TSA PreCheck.")]),
    dict(key="helm-charts", type="Fact", topic="deployment",
         r=["Helm charts for all services live in the infra-charts repo.",
            "All services' Helm charts are kept in the infra-charts repository.",
            "infra-charts repo = home of every service's Helm chart."]),
    dict(key="oncall-comp", type="Decision", topic="on-call",
         r=["On-call engineers get one comp day after each weekend shift.",
            "After every weekend on-call shift, the engineer gets a day off in lieu.",
            "On-call comp: 1 day off per weekend shift.",
            "Each weekend of on-call earns one compensation day."],
         la=[("number", "On-call engineers get two comp days after each weekend shift.")],
         u=["On-call comp was raised from one day to a day and a half per weekend shift."]),
    dict(key="trash-day", type="Fact", topic="household",
         r=["Trash pickup is on Thursday mornings.",
            "Garbage is collected Thursday mornings.",
            "The trash gets picked up Thursday AM.",
            "Thursday morning is trash collection day at the user's place.",
            "Trash is usually collected on Thursdays, in the morning.",
            "Our garbage collection day is Thursday (mornings)."],
         la=[("entity", "Recycling pickup is on Thursday mornings.")],
         u=["Trash pickup moved from Thursday to Wednesday mornings.",
            "Garbage collection is Wednesday morning now, not Thursday."]),
    dict(key="meeting-length", type="Preference", topic="meetings",
         r=["The user prefers meetings no longer than 30 minutes.",
            "Thirty minutes is the most the user wants a meeting to last.",
            "Meeting length preference: max 30 min."],
         la=[("number", "The user prefers meetings no longer than 45 minutes.")]),
    dict(key="problem-details", type="Fact", topic="public api",
         r=["The public API returns errors in RFC 7807 problem-details format.",
            "Errors from the public API follow RFC 7807 (problem details).",
            "Public API error format: RFC 7807."],
         la=[("qualifier", "The internal API returns errors in RFC 7807 problem-details format.")]),
    dict(key="401k", type="Fact", topic="retirement savings",
         r=["The user contributes 8% of salary to their 401(k).",
            "8 percent of the user's salary goes into the 401k.",
            "401(k) contribution: 8% of pay.",
            "The user puts eight percent of each paycheck into their 401(k)."],
         la=[("number", "The user contributes 6% of salary to their 401(k).")],
         u=["The user raised the 401(k) contribution from 8% to 10%."]),
    dict(key="coworking-hours", type="Fact", topic="work schedule",
         r=["The coworking space opens at 7 am on weekdays.",
            "On weekdays the coworking space opens at 07:00.",
            "Coworking space hours start 7am Mon-Fri."],
         la=[("qualifier", "The coworking space opens at 7 am on weekends.")]),
    dict(key="grandma-recipe", type="Fact", topic="cooking",
         r=["The user's grandmother's lasagna recipe uses ricotta, not béchamel.",
            "Grandma's lasagna (the user's family recipe) is made with ricotta rather than béchamel.",
            "In the user's grandmother's lasagna, ricotta is used instead of a béchamel."],
         la=[("relation side", "The user's grandmother's lasagna recipe uses béchamel, not ricotta.")]),
    dict(key="laptop", type="Fact", topic="hardware",
         r=["The user's work laptop is a 14-inch MacBook Pro with 32 GB of RAM.",
            "Work laptop: MacBook Pro 14\", 32GB RAM.",
            "The user works on a fourteen-inch MacBook Pro that has 32 gigabytes of memory."],
         la=[("number", "The user's work laptop is a 14-inch MacBook Pro with 16 GB of RAM.")]),
    dict(key="nyc-office", type="Fact", topic="company offices",
         r=["The NYC office is on the 12th floor.",
            "The New York City office is located on floor 12.",
            "Twelfth floor: that's where the company's NYC office is.",
            "Note: NYC office = 12th floor.",
            "The company's New York office sits on the twelfth floor."],
         la=[("entity", "The Austin office is on the 12th floor.")]),
    dict(key="rate-limiter", type="Decision", topic="architecture",
         r=["The team decided that the API gateway enforces rate limits, not individual services.",
            "Rate limiting is done at the API gateway rather than inside each service, per team decision.",
            "Decision: rate limits are enforced by the gateway, not by the services."]),
]

# ---------------------------------------------------------------------------
# Near-misses: change-like words that do NOT update any memory. (type, text, topic)
# ---------------------------------------------------------------------------
DISTRACTORS = [
    ("Context", "We moved the couch next to the window to make room for a reading chair.", "home"),
    ("Fact", "The hallway light switch sticks and needs a firm press.", "home"),
    ("Habit", "The user cuts vegetables the night before to save time on weekday dinners.", "food and drink"),
    ("Context", "The user noted that tech shares closed lower on Friday.", "personal finance"),
    ("Context", "The price of the espresso machine the user was eyeing dropped yesterday.", "shopping"),
    ("Fact", "The user's favorite line from the keynote was \"right now is the only deadline that matters.\"", "quotes"),
    ("Insight", "Restarting a pod in staging moves it to another node without changing how many nodes the cluster has.", "kubernetes"),
    ("Context", "The user switched seats with a colleague on the airport shuttle last week.", "travel"),
    ("Context", "The swim coach switched the lane order for one day of drills only.", "exercise"),
    ("Context", "Biscuit dragged his bed from the kitchen into the hallway on his own.", "pets"),
    ("Context", "The user replaced the car's windshield wiper blades over the weekend.", "car"),
    ("Context", "The disk usage alert switched off by itself after the cleanup job ran.", "monitoring"),
    ("Fact", "In the podcast the user recommended, the host says \"I no longer believe in productivity apps.\"", "podcasts"),
    ("Fact", "Daylight saving time moved the clocks forward an hour on March 8.", "calendar"),
    ("Context", "The user's bank replaced their debit card because the chip was damaged.", "personal finance"),
    ("Context", "The thermostat display switched to Spanish after a firmware glitch, but the settings stayed the same.", "home"),
    ("Context", "At the all-hands the CEO said \"we are moving fast right now, and that is fine.\"", "company news"),
    ("Context", "The orders database had a failover drill; the primary switched to the replica and back within ten minutes.", "databases"),
    ("Context", "Priya moved her desk to the third floor near the window.", "team"),
    ("Context", "The kids cut out paper snowflakes at school on Friday.", "school"),
    ("Context", "Flight prices to Denver dropped after the user had already booked.", "travel"),
    ("Context", "The user switched the keyboard layout for a pair-programming session and then switched it back.", "tools"),
    ("Fact", "The network switch in rack 2 has 48 ports.", "networking"),
    ("Insight", "The user's doctor said blood pressure readings often drop in the evening.", "health"),
    ("Context", "Maya swapped her library book for a new one on Saturday.", "family"),
    ("Fact", "The App Store release notes template has a \"What changed\" section at the top.", "mobile releases"),
    ("Context", "The piano teacher replaced a broken string on the school's piano.", "kids activities"),
    ("Context", "Netflix no longer carries the cooking show the user was halfway through.", "subscriptions"),
    ("Context", "The team's on-call phone was replaced with a newer model after it cracked.", "on-call"),
    ("Context", "Snow cut power to the neighborhood for two hours on Tuesday night.", "household"),
    ("Insight", "Moving from one cloud to another rarely saves money in the first year, according to an article the user read.", "cloud infrastructure"),
]

# ---------------------------------------------------------------------------
# Contradictions: (topic, type, a, b, mode, offset_days)
#   "same"    : both carry the identical timestamp, exclusive values
#   "earlier" : b announces a change to a, but is dated offset_days BEFORE a
# ---------------------------------------------------------------------------
CONTRADICTIONS = [
    ("climbing", "Fact", "The user's climbing gym closes at 9 pm on weekdays.",
     "The user's climbing gym closes at 10 pm on weekdays.", "same", 0),
    ("team calendar", "Fact", "The team's shared calendar is set to Pacific time.",
     "The team's shared calendar is set to Eastern time.", "same", 0),
    ("book club", "Habit", "The user's book club meets on the second Tuesday of the month.",
     "The book club switched from the second Tuesday to the last Thursday of the month.", "earlier", 4),
    ("secrets", "Fact", "The staging database password is stored in Vault.",
     "The staging database password is stored in AWS Secrets Manager.", "same", 0),
    ("groceries", "Habit", "The weekly grocery order is delivered on Saturdays.",
     "Grocery delivery was moved from Saturdays to Sundays.", "earlier", 6),
    ("medical records", "Fact", "The user's blood type is O positive.",
     "The user's blood type is A positive.", "same", 0),
    ("retrospectives", "Decision", "The data team's retro is held every other Friday.",
     "The data team's retro is no longer every other Friday; it is monthly now.", "earlier", 3),
    ("tokyo trip", "Context", "The user's flight to Tokyo departs at 11:05.",
     "The user's flight to Tokyo departs at 13:40.", "same", 0),
]

# ---------------------------------------------------------------------------
# Lists and numbered notes: (topic, type, [items]); one timestamp per group.
# ---------------------------------------------------------------------------
LISTS = [
    ("camping trip", "Context", [
        "Camping trip packing list: headlamp.",
        "Camping trip packing list: sleeping bag.",
        "Camping trip packing list: water filter.",
        "Camping trip packing list: bug spray.",
        "Camping trip packing list: spare socks.",
        "Camping trip packing list: first-aid kit."]),
    ("onboarding", "Fact", [
        "New-hire onboarding step 1: set up the laptop with full-disk encryption.",
        "New-hire onboarding step 2: file a ticket for VPN credentials.",
        "New-hire onboarding step 3: join the #eng-announce channel.",
        "New-hire onboarding step 4: pair with a buddy on a first small bug fix.",
        "New-hire onboarding step 5: read the incident response runbook."]),
    ("budget review notes", "Context", [
        "Budget review note #31 saved to the shared drive.",
        "Budget review note #32 saved to the shared drive.",
        "Budget review note #33 saved to the shared drive.",
        "Budget review note #34 saved to the shared drive."]),
    ("groceries", "Context", [
        "Grocery list: oat milk.",
        "Grocery list: spinach.",
        "Grocery list: brown rice.",
        "Grocery list: lemons.",
        "Grocery list: dish soap."]),
    ("sprint tickets", "Decision", [
        "Sprint 18 includes PAY-412: add retries to the webhook sender.",
        "Sprint 18 includes PAY-415: show refund status on the receipt page.",
        "Sprint 18 includes PAY-419: remove the legacy coupon endpoint.",
        "Sprint 18 includes PAY-423: alert when settlement files arrive late."]),
    ("reading", "Preference", [
        "Reading list: Thinking in Systems by Donella Meadows.",
        "Reading list: The Pragmatic Programmer.",
        "Reading list: Braiding Sweetgrass.",
        "Reading list: Project Hail Mary."]),
    ("invoicing", "Fact", [
        "Invoice INV-2026-0141 was sent to Harbor Labs.",
        "Invoice INV-2026-0142 was sent to Harbor Labs.",
        "Invoice INV-2026-0143 was sent to Harbor Labs.",
        "Invoice INV-2026-0144 was sent to Harbor Labs."]),
    ("recipes", "Fact", [
        "Pancake recipe step 1: whisk flour, sugar and baking powder.",
        "Pancake recipe step 2: beat the eggs into the milk.",
        "Pancake recipe step 3: fold the wet mix into the dry mix.",
        "Pancake recipe step 4: rest the batter ten minutes before frying."]),
    ("chores", "Context", [
        "Weekend chores: clean the gutters.",
        "Weekend chores: fix the leaky bathroom faucet.",
        "Weekend chores: mow the lawn.",
        "Weekend chores: wash the car."]),
]

# ---------------------------------------------------------------------------
# Unrelated singletons: (type, text, topic)
# ---------------------------------------------------------------------------
UNRELATED = [
    ("Fact", "The user's bike has a 52-tooth front chainring.", "cycling"),
    ("Fact", "Expense reports are due by the 5th of the following month.", "company finance"),
    ("Fact", "The user's apartment building has a shared rooftop garden.", "housing"),
    ("Fact", "The staging environment is wiped and reseeded every night.", "test environments"),
    ("Fact", "The user's son is allergic to cats.", "family health"),
    ("Fact", "The internal docs portal is built with Docusaurus.", "internal docs"),
    ("Fact", "The user's nearest hospital is St. Brendan's on Cedar Avenue.", "local places"),
    ("Fact", "The feature-flag service is LaunchDarkly.", "feature flags"),
    ("Fact", "The user holds a PADI open water diving certificate.", "hobbies"),
    ("Fact", "The legal team must sign off on any change to the privacy policy.", "compliance"),
    ("Fact", "The user's partner, Sam, is a high-school chemistry teacher.", "family"),
    ("Decision", "The team agreed to write design docs for any project longer than two sprints.", "engineering process"),
    ("Decision", "The user decided to repaint the guest room sage green.", "home projects"),
    ("Decision", "New services must expose a /healthz endpoint.", "service standards"),
    ("Decision", "The family chose Lake Tahoe for the August vacation.", "vacation"),
    ("Decision", "The company will take on a summer cohort of four interns.", "internships"),
    ("Decision", "The team will deprecate the v1 mobile API at the end of the year.", "mobile api"),
    ("Decision", "Customer data exports will be encrypted with the customer's own key.", "data protection"),
    ("Decision", "The user decided to sell the old road bike.", "cycling gear"),
    ("Decision", "Interview loops for senior engineers will include a system design round.", "hiring"),
    ("Decision", "The household will stop buying bottled water.", "household"),
    ("Preference", "The user likes dark roast beans from small local roasters.", "coffee beans"),
    ("Preference", "The user sketches system diagrams on a whiteboard before drawing them digitally.", "diagrams"),
    ("Preference", "The user wants travel itineraries sent as a single PDF.", "travel planning"),
    ("Preference", "The user would rather take trains than drive for trips under four hours.", "transport"),
    ("Preference", "The user likes code examples in Python rather than pseudocode.", "explanations"),
    ("Preference", "The user enjoys crime novels set in Scandinavia.", "books"),
    ("Preference", "The user prefers hotel rooms on high floors.", "hotels"),
    ("Habit", "The user batch-cooks soups on Sunday afternoons.", "meal prep"),
    ("Habit", "The user repots the fiddle-leaf fig every spring.", "plants"),
    ("Habit", "The user checks the credit card statement every Friday.", "money habits"),
    ("Habit", "The user writes a short shutdown note before logging off each workday.", "journaling"),
    ("Habit", "The user walks Biscuit around the lake after dinner.", "dog walks"),
    ("Habit", "The user clears the email inbox before starting on code.", "email"),
    ("Habit", "The user stretches for five minutes every hour while at the desk.", "ergonomics"),
    ("Context", "The user is learning to play chess online.", "games"),
    ("Context", "The user's team is hiring two backend engineers this quarter.", "hiring"),
    ("Context", "The user is planning a surprise party for Sam's 40th birthday.", "celebrations"),
    ("Context", "The user is comparing heat pumps for the house.", "home energy"),
    ("Context", "The user is mentoring a junior engineer named Tomás.", "mentoring"),
    ("Context", "The company is preparing for a SOC 2 audit.", "compliance"),
    ("Context", "The user's neighbor is renovating their kitchen, so mornings are noisy.", "neighbors"),
    ("Context", "The user tutors a high-school student in algebra one evening a week.", "volunteering"),
    ("Insight", "Customers who use the mobile app renew at a higher rate than web-only customers.", "retention"),
    ("Insight", "Most slow queries in the reporting service come from missing indexes on date columns.", "query performance"),
    ("Insight", "The user is most productive on days without meetings before noon.", "productivity"),
    ("Insight", "Onboarding emails sent in the morning get more opens than evening ones.", "email marketing"),
    ("Insight", "Spending spikes for the household happen in the week after payday.", "spending"),
    ("Insight", "Flaky end-to-end tests mostly fail on the checkout flow's third-party widget.", "testing"),
    ("Pattern", "The user forgets to log hours when traveling.", "timesheets"),
    ("Pattern", "Outages in the queue service often follow certificate renewals.", "incidents"),
    ("Pattern", "The user asks for a checklist whenever a task has more than five steps.", "working style"),
    ("Pattern", "Big releases tend to slip by about a week.", "delivery"),
    ("Pattern", "The user's migraines tend to come after poor sleep.", "health patterns"),
    ("Style", "The user wants bullet points kept under fifteen words each.", "formatting"),
    ("Style", "Explain acronyms the first time they appear; the user dislikes unexplained jargon.", "explanations"),
    ("Style", "The user likes a friendly but brief tone in emails drafted for them.", "email drafting"),
    ("Style", "Code reviews written for the user should list blocking issues first.", "review comments"),
    ("Style", "Dates in documents for the user should be written as YYYY-MM-DD.", "formatting"),
    ("Style", "The user wants SQL keywords in uppercase.", "sql style"),
]


def norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def main() -> None:
    rng = random.Random(SEED)
    memories: list[dict] = []
    lab = {"fact": {}, "subject": {}, "topic": {}, "supersedes": [],
           "contradicts": [], "lookalike": [], "kind": {}}
    la_cat: dict[str, str] = {}

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    def at(day: int) -> datetime:
        return BASE + timedelta(days=day, hours=rng.randint(7, 21),
                                minutes=rng.randint(0, 59), seconds=rng.randint(0, 59))

    def add(content, mtype, ts, fact, subject, topic, kind):
        mid = new_id()
        memories.append({
            "id": mid, "content": content, "type": mtype,
            "timestamp": ts.isoformat(),
            "importance": round(rng.uniform(0.3, 0.95), 2),
            "confidence": round(rng.uniform(0.55, 1.0), 2),
            "access_count": rng.randint(0, 25),
            "tags": [TAG],
        })
        lab["fact"][mid] = fact
        lab["subject"][mid] = subject
        lab["topic"][mid] = topic
        lab["kind"][mid] = kind
        return mid, ts

    # ---- fact groups, updates, look-alikes --------------------------------
    for gi, g in enumerate(GROUPS, 1):
        fid, sid = f"G{gi:03d}", f"SG{gi:03d}"
        n = len(g["r"])
        has_upd = bool(g.get("u"))
        cap = g.get("hi", 150 if has_upd else 200)
        window = min(rng.randint(n * 5, n * 12), cap)
        lo = rng.randint(0, max(0, cap - window))
        days = sorted(rng.sample(range(lo, lo + window + 1), n))
        old_ids = []
        for d, text in zip(days, g["r"]):
            mid, _ = add(text, g["type"], at(d), fid, sid, g["topic"], "restatement")
            old_ids.append(mid)
        last_old = max(datetime.fromisoformat(memories[-1 - k]["timestamp"]) for k in range(n))

        if has_upd:
            umax = BASE + timedelta(days=g.get("umax", LAST_DAY))
            t = last_old + timedelta(days=rng.randint(2, 14), hours=rng.randint(0, 8))
            if t > umax:
                t = last_old + timedelta(days=2, hours=1)
            assert t <= umax, g["key"]
            for j, text in enumerate(g["u"]):
                if j:
                    t = t + timedelta(days=rng.randint(2, 12), hours=rng.randint(0, 5))
                assert t <= END, g["key"]
                uid, _ = add(text, g["type"], t, f"{fid}-U", sid, g["topic"], "update")
                lab["supersedes"].extend([uid, o] for o in old_ids)

        for k, (cat, text) in enumerate(g.get("la", []), 1):
            lcap = g.get("hi", LAST_DAY - 1)
            lid, _ = add(text, g["type"], at(rng.randint(0, lcap)),
                         f"{fid}-L{k}", f"{sid}-L{k}", g["topic"], "lookalike")
            lab["lookalike"].extend([lid, o] for o in old_ids)
            la_cat[lid] = cat

    # ---- near-miss distractors --------------------------------------------
    for di, (mtype, text, topic) in enumerate(DISTRACTORS, 1):
        add(text, mtype, at(rng.randint(0, LAST_DAY - 1)), f"D{di:03d}", f"SD{di:03d}",
            topic, "distractor")

    # ---- contradictions ---------------------------------------------------
    for ci, (topic, mtype, a, b, mode, off) in enumerate(CONTRADICTIONS, 1):
        ta = at(rng.randint(20, LAST_DAY - 2))
        tb = ta - timedelta(days=off, hours=rng.randint(0, 5)) if mode == "earlier" else ta
        ida, _ = add(a, mtype, ta, f"C{ci}-a", f"SC{ci}", topic, "contradiction")
        idb, _ = add(b, mtype, tb, f"C{ci}-b", f"SC{ci}", topic, "contradiction")
        lab["contradicts"].append([ida, idb])

    # ---- lists and numbered notes -----------------------------------------
    for li, (topic, mtype, items) in enumerate(LISTS, 1):
        t = at(rng.randint(0, LAST_DAY - 1))
        for ii, text in enumerate(items, 1):
            add(text, mtype, t, f"L{li}-{ii}", f"SL{li}-{ii}", topic, "list")

    # ---- unrelated singletons ---------------------------------------------
    for ui, (mtype, text, topic) in enumerate(UNRELATED, 1):
        add(text, mtype, at(rng.randint(0, LAST_DAY - 1)), f"U{ui:03d}", f"SU{ui:03d}",
            topic, "unrelated")

    # ---- validation -------------------------------------------------------
    ids = {m["id"] for m in memories}
    byid = {m["id"]: m for m in memories}
    assert len(ids) == len(memories)
    for key in ("fact", "subject", "topic", "kind"):
        assert set(lab[key]) == ids, key
    for key in ("supersedes", "contradicts", "lookalike"):
        for a, b in lab[key]:
            assert a in ids and b in ids and a != b, key
        assert len({tuple(p) for p in lab[key]}) == len(lab[key]), key
    ts = lambda i: datetime.fromisoformat(byid[i]["timestamp"])  # noqa: E731
    for new, old in lab["supersedes"]:
        assert ts(new) - ts(old) >= timedelta(days=2)
        assert lab["subject"][new] == lab["subject"][old]
        assert lab["fact"][new] != lab["fact"][old]
    for a, b in lab["contradicts"]:
        assert lab["subject"][a] == lab["subject"][b] and ts(b) <= ts(a)
        assert lab["fact"][a] != lab["fact"][b]
    for la, orig in lab["lookalike"]:
        assert lab["subject"][la] != lab["subject"][orig]
        assert lab["topic"][la] == lab["topic"][orig]
    by_fact = defaultdict(list)
    for m in memories:
        by_fact[lab["fact"][m["id"]]].append(m)
    for f, ms in by_fact.items():
        assert len({m["type"] for m in ms}) == 1, f
    by_list = defaultdict(set)
    for m in memories:
        if lab["kind"][m["id"]] == "list":
            by_list[lab["fact"][m["id"]].split("-")[0]].add(m["timestamp"])
    assert all(len(v) == 1 for v in by_list.values())
    labelled = {x for key in ("supersedes", "contradicts", "lookalike")
                for p in lab[key] for x in p}
    for i, k in lab["kind"].items():
        if k in ("distractor", "list", "unrelated"):
            assert i not in labelled
    seen = {}
    for m in memories:
        k = norm(m["content"])
        assert k not in seen, (m["content"], seen.get(k))
        seen[k] = m["content"]
    for m in memories:
        assert BASE <= ts(m["id"]) <= END
    assert 450 <= len(memories) <= 550, len(memories)

    # ---- write ------------------------------------------------------------
    memories.sort(key=lambda m: (m["timestamp"], m["id"]))
    with open(OUT / "holdout.jsonl", "w", encoding="utf-8") as fh:
        for m in memories:
            fh.write(json.dumps(m, ensure_ascii=False) + "\n")
    with open(OUT / "holdout_labels.json", "w", encoding="utf-8") as fh:
        json.dump(lab, fh, ensure_ascii=False, indent=1)

    kinds = Counter(lab["kind"].values())
    cats = Counter(la_cat.values())
    n_upd_facts = len({lab["fact"][i] for i, k in lab["kind"].items() if k == "update"})
    sizes = Counter(len(g["r"]) for g in GROUPS)
    write_readme(memories, lab, kinds, cats, n_upd_facts, sizes)
    print(f"memories: {len(memories)}")
    for k in KIND_ORDER:
        print(f"  {k:13s} {kinds[k]}")
    print(f"  groups {len(GROUPS)}, update facts {n_upd_facts}")
    print(f"  pairs: supersedes {len(lab['supersedes'])}, contradicts "
          f"{len(lab['contradicts'])}, lookalike {len(lab['lookalike'])}")
    print(f"  look-alike categories: {dict(cats)}")


KIND_ORDER = ["restatement", "update", "lookalike", "distractor", "contradiction",
              "list", "unrelated"]


def write_readme(memories, lab, kinds, cats, n_upd_facts, sizes):
    ex_rng = random.Random(SEED + 1)
    types = Counter(m["type"] for m in memories)
    L = [
        "# Held-out memory-hygiene test set #2",
        "",
        "Generated by `make_holdout.py` (stdlib only, fixed seed "
        f"`{SEED}`): `python3 make_holdout.py` rewrites `holdout.jsonl`, "
        "`holdout_labels.json` and this README. Every memory is tagged `holdout2`.",
        "",
        "**Independence.** All sentences were written by hand for this set, without "
        "reading the detection rules under `consolidation/` (or `bench/quality_set.py`), "
        "so the set is not shaped to fit them. Only the file format (field names, label "
        "structure) follows `bench/holdout`. No sentence is copied from that set. "
        "No random text noise is added; all wording variation is hand-written.",
        "",
        "## Files",
        "- `holdout.jsonl`: one memory per line: `id` (uuid), `content`, `type`, "
        "`timestamp` (ISO-8601 UTC), `importance`, `confidence`, `access_count`, `tags`.",
        "- `holdout_labels.json`: `fact`, `subject`, `topic`, `kind` (maps id -> label), "
        "and pair lists `supersedes` ([newer, older]), `contradicts` ([a, b]), "
        "`lookalike` ([lookalike, original]).",
        "",
        "## How it is built",
        f"- **Restatement groups** ({len(GROUPS)}, sizes {dict(sorted(sizes.items()))}): one "
        "fact said 2-6 times in different words (synonyms, reordered clauses, active/passive, "
        "abbreviations such as PR, k8s, NYC, DWH, numbers as words or digits, dates as "
        "`March 3` / `3 March` / `3/3`, times as `2pm` / `14:00`, an extra `usually` / "
        "`currently`, or a `Note:` / `The user mentioned that` framing), spread over days "
        "or weeks. All memories in a group share `fact`, `subject`, `topic` and `type`.",
        f"- **Updates** ({n_upd_facts} new facts, some said twice): same `subject`, new "
        "`fact`, dated at least 2 days after every memory of the old fact, and the text "
        "says that something changed (moved from/to, no longer, replaced by, instead of, "
        "switched to, used to be, changed ... to, as of ...). Each update memory supersedes "
        "every memory of the old fact.",
        "- **Look-alikes**: a copy of one restatement with exactly one thing changed "
        "(see categories) and no change wording. Own `fact` and `subject`, the group's "
        "`topic`. `lookalike` pairs each with every restatement of the original fact. "
        "They must not be merged, superseded or flagged as contradictions.",
        "- **Distractors** (near-misses for updates): sentences with change-like words "
        "(moved, switched, replaced, no longer, dropped, cut, `right now` inside a quote, "
        "`switch` as a noun) that update nothing in the set. Several share a topic with a "
        "fact group (e.g. the orders database failover drill, the thermostat display "
        "language, the dog moving its bed). Own fact/subject, no pair labels.",
        "- **Contradictions**: pairs sharing a `subject` with exclusive values and no usable "
        "order: either identical timestamps (to the second), or a change announcement "
        "(`b`) dated before the statement it changes (`a`). `contradicts` = [a, b].",
        "- **Lists and numbered notes**: items of one list recorded at one identical "
        "timestamp (packing list, onboarding steps, grocery list, recipe steps, ...) and "
        "notes that differ only by a serial number (`Budget review note #31`, `#32`, ...; "
        "invoice numbers). Each item is its own fact and subject: not duplicates, not "
        "contradictions, not updates.",
        "- **Unrelated**: singletons with their own fact, subject and topic.",
        "- `topic` is a broad theme; several groups and distractors share one.",
        "",
        "## Counts",
        f"- memories: {len(memories)}",
    ]
    for k in KIND_ORDER:
        L.append(f"- {k}: {kinds[k]}")
    L += [
        f"- look-alike categories: {dict(cats.most_common())}",
        f"- memory types: {dict(types.most_common())}",
        f"- label pairs: supersedes {len(lab['supersedes'])}, contradicts "
        f"{len(lab['contradicts'])}, lookalike {len(lab['lookalike'])}",
        "",
        "## Examples (10 per kind)",
    ]
    for k in KIND_ORDER:
        rows = [m for m in memories if lab["kind"][m["id"]] == k]
        if k == "contradiction":
            keep = set()
            for a, b in lab["contradicts"][:5]:
                keep |= {a, b}
            rows = [m for m in rows if m["id"] in keep]
        elif len(rows) > 10:
            rows = ex_rng.sample(rows, 10)
        L += ["", f"### {k}", "", "| timestamp | type | fact | subject | topic | content |",
              "|---|---|---|---|---|---|"]
        for m in sorted(rows, key=lambda m: (lab["fact"][m["id"]], m["timestamp"])):
            i = m["id"]
            text = m["content"].replace("|", "\\|")
            L.append(f"| {m['timestamp'][:19]} | {m['type']} | {lab['fact'][i]} | "
                     f"{lab['subject'][i]} | {lab['topic'][i]} | {text} |")
    (OUT / "README.md").write_text("\n".join(L) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

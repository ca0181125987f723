"""The dialogue scripts of the generated calls, in a small line language read by ``templates``.

* ``block: NAME`` starts one alternative of a reusable block; ``scenario: CONTEXT PURPOSE``
  starts a dialogue scenario; ``ending: OUTCOME`` starts one way the scenario above can end;
* ``summary: text`` and ``action: text`` give the label text of the scenario or ending above
  (a scenario's summary is followed by its ending's; action items come from the ending);
* ``role: text`` is a line said by the person in slot ``role`` (agent, cust, p1, mgr, ...);
  ``| text`` is another phrasing of the line above (one is drawn per conversation);
  ``?role: text`` or ``?@NAME`` is a line or block that is sometimes left out; ``@NAME`` is
  one alternative of block NAME.

In text, ``{slot}`` or ``{slot:form}`` marks a value. Personal information: a person
(``{cust}`` full name, ``{cust.first}``, ``{cust.last}``), an organization (``{org}``,
``{client}``, ``{vendor}``), something a person or organization owns (``{cust.email}``,
``{org.url}``), or a standalone item (``{ticket}``, ``{ip}``, ``{city}``). A trailing digit
makes a second item of a kind (``{cust.addr2}``). A ``FILL_VALUES`` name (``{amount}``) is
ordinary text. Forms: ``spell`` (letters spelled out), ``spoken`` (said aloud), ``plain``
(always written normally). Summaries and action items may only use ``FILL_VALUES`` slots.
"""

SCRIPTS = """
block: support_open
agent: Thank you for calling {org}, my name is {agent.first}. How can I help you today?
     | Hi, you've reached {org} customer support, this is {agent.first} speaking.
     | {org}, this is {agent.first}. What can I do for you?
     | Good morning, thanks for calling {org}. You're speaking with {agent}.

block: spell_last
agent: And how do you spell the last name?
     | Could you spell your last name for me?
cust: {cust.last:spell}.
    | Sure, it's {cust.last:spell}.
    | {cust.last}, {cust.last:spell}.

block: ask_dob
agent: And your date of birth?
     | Can you also confirm your date of birth, please?
cust: It's {cust.dob}.
    | {cust.dob}.

block: support_verify
agent: I can help with that. Can I get your full name, please?
     | Sure, I can look into that. Who am I speaking with?
     | Okay, let me pull up the account. What's your first and last name?
cust: Yeah, it's {cust}.
    | Sure, my name is {cust}.
    | {cust}.
?@spell_last
agent: Thank you. And the account number?
     | Great. Can you read me the account number from your statement?
cust: Yeah, it's {acct}.
    | Um, hold on. Okay, it's {acct}.

block: support_verify
agent: Sure. Can I have your name and the phone number on the account?
     | I can check that for you. What's your name and phone number, please?
cust: It's {cust}, and the number is {cust.phone}.
    | {cust}. Phone number is {cust.phone}.
agent: Thanks, {cust.first}. And for security, your date of birth?
     | Got it. Can you also confirm your date of birth?
cust: {cust.dob}.
    | Sure, it's {cust.dob}.

block: support_verify
agent: Of course. Let me find your account. What's your full name?
cust: {cust}.
    | It's {cust}.
?@spell_last
agent: And the email address on the account?
     | Thanks. Can you confirm the email we have on file?
cust: It should be {cust.email}.
    | {cust.email}.
?agent: So that's {cust.email}. Perfect, I've got you.
      | Okay, {cust.email}, I see it. Thanks.

block: support_verify
agent: I can help with that. First I need to verify your identity. Your full name?
cust: {cust}.
    | It's {cust}.
agent: And the social security number on the account?
     | Can you give me your social security number for verification?
cust: Sure, it's {cust.ssn}.
    | Um, {cust.ssn}.
?@ask_dob

block: support_verify
agent: Sure thing. Can I have your name and the billing address?
cust: Yes, it's {cust}, and the address is {cust.addr} in {cust.city}.
    | {cust}, at {cust.addr}, {cust.city}.
?@ask_dob
agent: Thank you, {cust.first}, you're verified.
     | Perfect, thanks {cust.first}.

block: support_verify
agent: I can look into that. Who do I have on the line?
cust: This is {cust}.
    | Hi, yeah, it's {cust}.
agent: Sorry, could you spell your first name?
cust: {cust.first:spell}.
    | Sure, {cust.first:spell}.
agent: Thanks. And your username for the online account?
cust: It's {cust.user}.
    | {cust.user}.

block: support_close
agent: Is there anything else I can help you with today, {cust.first}?
     | Anything else I can do for you, {cust.first}?
     | Is there anything else, {cust.first}?
cust: No, that's all. Thanks so much, {agent.first}.
    | No, that's it. Thank you.
    | Nope, you've been really helpful, thanks.
?agent: Thanks for calling {org}. Have a great day.

block: support_close
agent: Alright {cust.first}, you're all set. Anything else, call us at {org.phone}.
cust: Okay, thanks {agent.first}. Bye.
    | Great, thank you. Bye.

block: sales_open
agent: Hi, is this {cust.first}?
cust: Yes, speaking.
    | Yeah, this is {cust.first}.
agent: Hi {cust.first}, this is {agent} from {org}. Do you have a few minutes?
     | Great, it's {agent} with {org}. Is now still a good time?
cust: Sure, go ahead.
    | Yeah, I have about fifteen minutes.

block: sales_open
cust: Hello, {cust} speaking.
    | Hi, this is {cust} from {client}.
agent: Hi {cust.first}, it's {agent.first} from {org}. Thanks for making the time.
     | Hey {cust.first}, {agent} with {org} here. Thanks for jumping on.
cust: Of course.
    | No problem, good to talk again.

block: data_question
cust: What happens to our existing data?
    | Do we lose anything if we switch tiers?
agent: Nothing changes, everything carries over.
     | No, all your projects and history carry over.

block: sales_close
agent: Thanks for your time, {cust.first}. You can reach me directly at {agent.phone}.
     | Thanks {cust.first}, talk soon. My direct line is {agent.phone} if anything comes up.
cust: Thanks, {agent.first}. Bye.
    | Sounds good, bye.

block: sales_close
agent: Great talking to you, {cust.first}.
cust: You too. Take care.

block: meeting_open
p1: Okay, let's get started. Thanks everyone for joining.
  | Alright, I think everyone's here, let's kick off.
  | Hi all, thanks for hopping on.
?p2: Hey everyone.
?p3: Hi, sorry, I'm a couple of minutes late.

block: meeting_open
p1: {p3.first}, can you hear us okay?
p3: Yep, loud and clear.
  | Yes, sorry, I was on mute.
p1: Great, let's start.

block: meeting_close
p1: Okay, I think that covers it. Thanks everyone.
  | Great, that's all I had. Thanks all.
p2: Thanks.
?p3: Thanks, bye.

block: meeting_close
p1: Alright, let's wrap up. {p2.first}, {p3.first}, thanks for the updates.
p3: Thanks, talk later.

block: one_to_one_open
mgr: Hey {emp.first}, thanks for making time. How's your week going?
   | Hi {emp.first}, how are things?
emp: Pretty good, busy but good.
   | Honestly a bit hectic, but okay.

block: one_to_one_open
emp: Hi {mgr.first}, can you hear me?
mgr: Yes, hi {emp.first}. Good to see you.
   | Hey, yes. How have you been?
emp: Good, thanks.

block: one_to_one_close
mgr: Okay, anything else before we wrap?
emp: No, I think that's it. Thanks, {mgr.first}.
?mgr: Thanks, {emp.first}. Talk next week.

block: one_to_one_close
mgr: Good chat. Same time next week?
emp: Sounds good, thanks.

scenario: customer_support billing_question
summary: The customer called about an unexpected charge on their latest bill.
@support_open
cust: Hi, I'm calling because there's a charge on my bill I don't recognize.
    | Yeah hi, I have a question about my last bill, it's higher than usual.
    | Hi, I got charged {amount} this month and I don't know why.
@support_verify
agent: Okay, I have your account up. I see the {plan} plan and a charge of {amount}.
     | Thanks. Looking at the account now, there's a {amount} charge on the last statement.
     | Alright, I'm looking at your latest bill. Is it the {amount} charge?
cust: Right, that's the one. I never had that before.
    | Yes, that one. What is it for?
    | Yeah. I've never seen that charge before.
ending: resolved
summary: The agent found a duplicate charge and reversed it.
action: Confirm the credit appears on the account within five business days.
agent: It looks like you were billed twice for the same period, so I've reversed one.
     | You were charged twice for the same month. I've taken off the duplicate.
?agent: You should see the credit in three to five business days.
      | The credit will show up within five business days.
cust: Oh great, thank you.
    | Okay, perfect. Thanks for sorting that out.
ending: escalated
summary: The agent could not reverse the charge and escalated it to the billing team.
action: Billing team to review the disputed charge within three business days.
action: Email the customer the outcome of the review.
agent: I can't reverse that from here, so I'm opening a case with our billing team.
     | I'll need our billing team to look at this one, so I'm opening a case.
agent: Your reference number is {ticket}.
     | The case number is {ticket}, if you want to write that down.
cust: Okay. How long will that take?
    | Alright. And when will I hear back?
agent: Usually two to three business days. They'll email you at {cust.email}.
     | Two to three business days. You'll get an email at {cust.email}.
ending: resolved
summary: The agent explained that it was the plan's annual fee, which the customer accepted.
action: Note on the account that the annual fee was explained.
agent: That's the annual fee for the {plan} plan, it's charged once a year.
     | So that one is the yearly fee on the {plan} plan. It only comes once a year.
cust: Oh, okay. That makes sense then.
    | Huh, I forgot about that. Okay, thanks.

scenario: customer_support address_change
summary: The customer called to change the mailing address on their account after moving.
@support_open
cust: Hi, I just moved and I need to update my address.
    | Hey, I'm calling to change the mailing address on my account.
    | Hi there, we moved last month and I still get mail at the old place.
@support_verify
agent: No problem. What's the new address?
     | Sure thing. Go ahead with the new address whenever you're ready.
     | Congrats on the move. What's the new address?
cust: It's {cust.addr2}, {cust.city2}.
    | Um, {cust.addr2} in {cust.city2}.
    | The new place is {cust.addr2}, that's in {cust.city2}.
agent: Let me read that back: {cust.addr2}, {cust.city2}. Is that right?
     | Okay, {cust.addr2}, {cust.city2}, got it.
cust: Yes, that's right.
    | Yep, that's it.
ending: resolved
summary: The agent updated the mailing address.
action: Send the next statement to the updated address.
agent: Done, the address is updated and your next statement will go there.
     | All set. Everything from now on goes to the new address.
cust: Perfect.
    | Great, thank you.
ending: follow_up_needed
summary: The agent updated the address, but a proof of address is still required.
action: Customer to upload a proof of address through the website.
action: Verify the uploaded document once it is received.
agent: I've updated it, but since you moved states we need a proof of address.
     | That's changed, but for an out-of-state move we also need a proof of address.
agent: You can upload a utility bill at {org.url}.
     | A utility bill or a lease works. You can upload it at {org.url}.
cust: Sure, I'll do that tonight.
    | Okay, I'll upload something this week.

scenario: customer_support cancel_subscription
summary: The customer called to cancel their subscription because of the cost.
@support_open
cust: Hi, I'd like to cancel my subscription.
    | Yeah, I want to cancel my {plan} plan, please.
    | Hi, I'm calling to cancel. It's just too expensive for me right now.
@support_verify
agent: I'm sorry to hear you want to leave. Can I ask why you're cancelling?
     | Okay, I can help with that. Is there a reason you want to cancel today?
     | Understood. Before I do that, can I ask what's not working for you?
cust: Honestly it's too expensive, I'm paying {amount} a month.
    | I just don't use it enough to justify the price.
    | It's the price. {amount} a month is a lot for what I use.
ending: resolved
summary: The agent cancelled the subscription at the end of the billing cycle.
action: Send the customer a cancellation confirmation email.
agent: Understood. I've cancelled it effective at the end of this billing cycle.
     | Okay, it's cancelled. You keep access until the end of this billing cycle.
agent: You'll get a confirmation email at {cust.email}.
     | I'm sending a confirmation to {cust.email} now.
cust: Perfect, thanks.
    | Okay, thank you.
ending: retained
summary: The agent offered a discount and the customer decided to keep the subscription.
action: Apply the retention discount to the next six billing cycles.
agent: Before you go, I can offer you {percent} off for the next six months.
     | What if I took {percent} off your bill for the next six months?
cust: Oh, okay. Yeah, at that price I'll stay.
    | Hmm. Alright, if it's {percent} off I can keep it.
agent: Great, I've applied the discount to your account.
     | Perfect, the discount is on your account starting this month.

scenario: customer_support technical_issue
summary: The customer reported that their internet connection keeps dropping.
@support_open
cust: Hi, my internet keeps dropping every few minutes.
    | Hi, yeah, the internet has been cutting out since this morning.
    | Hey, my connection has been really unstable for like two days.
@support_verify
agent: Let me run a check. Can you read me the IP address on your router's status page?
     | Okay, can you tell me the IP address shown on the router admin page?
cust: Um, it says {ip}.
    | Sure, it's {ip}.
    | Give me a second. Okay, it shows {ip}.
agent: Thanks. I can see the modem at {ip} keeps losing its connection.
     | Okay, I see a lot of errors on the line for that modem.
?cust: Is it something on my end?
     | Did I do something wrong?
ending: resolved
summary: The agent reset the modem remotely and the connection came back.
action: Monitor the line for further drops over the next day.
agent: I've pushed a reset to the modem. Can you check if it's stable now?
     | I'm restarting the modem from here. Give it a minute and try again.
cust: Yeah, it looks like it's back. Thanks.
    | Okay, the lights are green now. It's working.
ending: escalated
summary: The agent found a line fault and booked a technician visit.
action: Technician to repair the line on the booked day.
action: Follow up with the customer after the visit.
agent: This looks like a line fault, so I'm booking a technician.
     | The problem is outside your home, so I need to send a technician.
agent: Your ticket number is {ticket}.
cust: Okay. When can they come?
    | Alright, what's the earliest they can come out?
agent: The first slot is {day} between {window}.
     | I have {day} between {window}. Does that work?

scenario: customer_support order_status
summary: The customer asked about an order that had not arrived.
@support_open
cust: Hi, I'm checking on an order I placed last week, it hasn't arrived.
    | Yeah hi, I ordered a {product} and it still hasn't shown up.
    | Hi, my order was supposed to come on {day} and nothing showed up.
@support_verify
agent: Do you have the order number handy?
     | Can you give me the order number? It's in the confirmation email.
cust: Yes, it's {order}.
    | Um, hold on. Okay, it's {order}.
agent: Thanks. I see order {order} for a {product}, shipped with {carrier}.
     | Okay, that order shipped on {day} with {carrier}.
ending: resolved
summary: The agent confirmed the order is out for delivery and shared tracking details.
action: Customer to track the delivery with the link sent by email.
agent: It's out for delivery and should arrive by tomorrow evening.
     | Good news, it's on the truck and should be there by tomorrow.
agent: I've sent the tracking link to {cust.email}.
cust: Great, thanks.
    | Oh good. Thank you.
ending: follow_up_needed
summary: The package was lost in transit, so the agent arranged a free replacement.
action: Ship a replacement order to the customer.
action: Open a claim with the carrier for the lost package.
agent: It looks like the package was lost in transit.
     | The tracking hasn't moved in a week, so it looks lost.
agent: I'm sending a replacement to {cust.addr} at no charge.
     | I'll ship a new one to {cust.addr}, free of charge.
cust: Okay, thank you.
    | That works, thanks.

scenario: customer_support account_access
summary: The customer could not log in to their online account.
@support_open
cust: Hi, I can't log in to my account, it keeps saying my password is wrong.
    | Hey, I'm locked out of the online portal.
    | Hi, the app won't let me sign in anymore.
@support_verify
agent: What username are you using to sign in?
     | And what's the username you log in with?
cust: It's {cust.user}.
    | {cust.user:spell}.
agent: Okay, I see {cust.user}. It got locked after too many attempts.
     | I found it. The account was locked after several failed logins.
ending: resolved
summary: The agent unlocked the account and sent a password reset link.
action: Customer to set a new password using the reset link.
agent: I've unlocked it and sent a reset link to {cust.email}.
     | It's unlocked now, and there's a reset link on its way to {cust.email}.
agent: Go to {org.url} and use the link to pick a new password.
cust: Got it, I see the email. Thanks.
    | Okay, it came through. Thank you.
ending: escalated
summary: The account had a security flag, so the agent escalated it to the security team.
action: Security team to review the flagged account and contact the customer.
agent: I see a security flag on the account, so I have to pass this on.
     | There's a security hold on this account, so I can't unlock it myself.
agent: Our security team will call you. Your case number is {ticket}.
cust: Okay, thanks.
    | Oh. Okay, I'll wait for the call.

scenario: customer_support payment_update
summary: The customer called to replace the expired card used for payments.
@support_open
cust: Hi, my card expired and I need to update the payment method.
    | Hi, I want to change the card you have on file.
    | Hey, I got a new card from my bank and need to update it.
@support_verify
agent: Sure. Go ahead with the new card number when you're ready.
     | No problem, what's the new card number?
cust: Okay, it's {cust.card}.
    | It's {cust.card}.
    | Ready? {cust.card}.
agent: Thank you. Is the billing address still {cust.addr}?
     | Got it. And the billing address stays {cust.addr}?
cust: Yes, same address.
    | Yep, nothing changed there.
ending: resolved
summary: The agent saved the new card for future payments.
action: Charge the next payment to the new card.
agent: The new card is saved and will be used for the next payment of {amount}.
     | All done. Your next payment of {amount} will go on the new card.
cust: Great, thanks.
ending: follow_up_needed
summary: The new card was declined, so the customer will check with their bank.
action: Customer to contact their bank about the declined card.
action: Update the payment method once the customer calls back.
agent: Hmm, the card was declined when I tried to verify it.
     | I'm sorry, the verification charge on that card was declined.
agent: Could you check with your bank and give us a call back?
cust: Ugh, okay. I'll call them.
    | Weird. Okay, I'll check with the bank.

scenario: customer_support fraud_report
summary: The customer reported purchases on their card that they did not make.
@support_open
cust: Hi, I think someone used my card, there are purchases I didn't make.
    | Hi, I'm seeing charges on my card that aren't mine.
    | Yes, hi, I need to report fraud on my card.
@support_verify
agent: I'm sorry about that. Which card is it?
     | Okay, let's get that stopped. Can you read me the card number?
cust: The number is {cust.card}.
    | It's the one ending, um, the full number is {cust.card}.
agent: I see two charges of {amount} from yesterday. Those weren't you?
     | There are two payments of {amount} from last night. Not yours?
cust: No, definitely not.
    | No, I was asleep. Those aren't mine.
ending: escalated
summary: The agent blocked the card and opened a fraud case.
action: Fraud team to investigate the disputed purchases.
action: Mail a replacement card to the customer.
agent: I've blocked the card and opened a fraud case, number {ticket}.
     | The card is blocked now. Your fraud case number is {ticket}.
agent: A new card will be mailed to {cust.addr}.
     | We'll send a new card to {cust.addr} within a week.
cust: Thank you so much.
    | Okay. Thanks for the quick help.

scenario: sales product_demo
summary: The agent gave the prospect a demo of {offering}.
@sales_open
agent: As promised, I'll walk you through {offering}. I sent the link to {cust.email}.
     | So today I'd like to show you how {offering} works for a team like yours at {client}.
cust: Great. We have {seats} people who'd use it, mostly in our {cust.city} office.
    | Sounds good. We'd have {seats} users, most of them in {cust.city}.
agent: Perfect. Let me share my screen. Okay, this is the main dashboard.
     | Let me share my screen. Can you see the dashboard now?
cust: That looks clean. Can it export reports?
    | How does it handle permissions for different teams?
    | Yeah, I see it. Can it connect to our calendar?
agent: Yes, that's built in, you set it up per team in the admin settings.
     | It can, that's all in the admin settings.
ending: follow_up_needed
summary: The prospect asked for a trial account.
action: Set up a trial account and send the login details to the prospect.
cust: This looks good. Can you set us up with a trial?
    | I'd like my team to try it. Is there a free trial?
agent: Absolutely, I'll send the trial details today.
     | Of course. You'll have the trial login by this afternoon.
ending: no_decision
summary: The prospect wants to discuss it with their team before deciding.
action: Check in with the prospect on {day}.
cust: Thanks. I need to talk to my team before we go further.
    | This was helpful. Let me run it by the team first.
agent: Of course. I'll check in with you on {day}.
ending: meeting_scheduled
summary: The prospect asked for a second demo with their manager.
action: Send a calendar invite for the follow-up demo on {day}.
cust: Could we do a second session with my manager, {contact}?
    | My manager, {contact}, should see this too. Can we do another session?
agent: Sure. How about {day} at {time}?
cust: That works. Send the invite to {contact.email}.

scenario: sales pricing_negotiation
summary: The prospect said the quoted price per seat was over their budget.
@sales_open
cust: So I looked at the quote. {amount} per seat is more than we budgeted.
    | I'll be honest, the quote for {client} came in higher than we expected.
agent: I understand. How many seats are you looking at?
     | Okay, that's fair. What's the team size we're talking about?
cust: Around {seats}, maybe more next year.
    | {seats} to start, and it could grow.
agent: At that volume I can take {percent} off if you sign an annual contract.
     | If you commit to a year, I can do {percent} off the list price.
ending: sale_closed
summary: The agent offered a discount for an annual contract and the prospect agreed to buy.
action: Send the annual contract to the customer for signature.
action: Process the first invoice payment.
cust: Okay, that works. Let's do it.
    | Alright, with that discount we can sign.
agent: Great. I'll send the contract to {cust.email} today.
agent: Can I take a card for the first invoice?
cust: Sure, it's {cust.card}.
ending: no_decision
summary: The agent offered a discount, but the prospect needs approval from finance.
action: Follow up with the prospect after the finance review.
cust: That helps, but I still need sign-off from finance.
    | I'll have to take that to our finance team.
agent: Understood. I'll follow up on {day}.

scenario: sales renewal
summary: The agent called about the customer's contract, which is up for renewal.
@sales_open
agent: I'm calling because your contract is up for renewal at the end of the month.
     | Your annual contract ends this month, so I wanted to talk about renewing.
cust: Right, I saw the email. What's changing?
    | Yeah, it's on my list. Is the price going up?
agent: The price stays at {amount} a month, and we've added {feature} at no extra cost.
cust: Okay. Is it still under account {acct}?
    | And that's still billed to {client}?
agent: Yes, same account, billed to {client}.
ending: sale_closed
summary: The customer agreed to renew at the same price.
action: Send the renewal order form for signature.
cust: Then let's renew. Send the paperwork to {cust.email}.
    | Good, we'll renew. The forms can go to {cust.email}.
agent: Will do, thank you.
ending: follow_up_needed
summary: The customer wants an updated quote with fewer seats before renewing.
action: Send the customer an updated quote with fewer seats.
cust: We'll probably need fewer seats. Can you send a new quote?
    | We've shrunk a bit, so I'd want a quote with fewer seats.
agent: Sure, I'll send one over by {day}.

scenario: sales lead_qualification
summary: The agent followed up on a content download to qualify the prospect as a lead.
@sales_open
agent: I saw you downloaded our guide on {topic} from {org.url}. Can I help at all?
     | You grabbed our {topic} guide on {org.url}, so I wanted to reach out.
cust: Oh, right. Yeah, we're looking at options.
    | Yes, we're just starting to look around.
agent: Can you tell me a bit about {client}? How big is the team?
cust: We're about {seats} people, based in {cust.city}.
    | {seats} people, mostly out of {cust.city}.
agent: And what are you using right now?
cust: Mostly spreadsheets, honestly.
    | An old tool we built ourselves, and it's falling apart.
ending: meeting_scheduled
summary: The prospect agreed to a product demo.
action: Send the demo invite for {day}.
agent: Would a demo next week be useful?
cust: Sure. {day} works, send it to {cust.email}.
ending: no_decision
summary: The prospect said it is not a priority this quarter.
action: Check back with the prospect next quarter.
cust: To be honest it's not a priority this quarter.
    | We don't have budget for it until next quarter.
agent: No problem. I'll check back next quarter.

scenario: sales upgrade_offer
summary: The agent offered an upgrade because the customer's team is near its plan limit.
@sales_open
agent: I noticed your team is close to the limit on the {plan} plan.
     | I see you've been hitting the project limit on the {plan} plan.
cust: Yeah, we keep hitting it.
    | Tell me about it. It's been annoying.
agent: The next tier adds {feature} and unlimited projects for {amount} a month.
?@data_question
ending: sale_closed
summary: The customer accepted the upgrade.
action: Upgrade the customer's account to the next tier.
cust: Okay, let's upgrade. The account is {acct}.
    | Fine, go ahead and upgrade account {acct}.
agent: Done. You'll see the new features within the hour.
ending: no_decision
summary: The customer will decide after reviewing usage with their team.
action: Send the customer a usage report to review.
cust: Let me look at our usage with the team first.
agent: Sure, I'll send you a usage report.

scenario: sales security_review
summary: The prospect's IT team raised security questions before signing.
@sales_open
cust: Before we sign, our IT team has a few security questions.
    | Our security people want some answers before we go ahead.
agent: Sure, happy to help. What do they need?
cust: They want logins restricted to our office network. Can you allowlist {ip}?
agent: Yes, IP allowlisting is included. I'll note {ip} for your workspace.
     | We can do that. I've written down {ip} for your account.
cust: And where is the data stored?
    | They also asked where the data lives.
agent: In data centers in the US, and we can share our security report.
ending: sale_closed
summary: The answers were satisfactory and the prospect agreed to sign.
action: Send the order form and configure the IP allowlist.
cust: Great, that covers it. We're ready to sign.
agent: Wonderful. Please send the signed form to {agent.email}.
ending: follow_up_needed
summary: The prospect asked for the security report to be sent to their IT lead.
action: Send the security report to the prospect's IT lead.
cust: Can you send the report to our IT lead, {contact}?
agent: Sure, what's the best email?
cust: {contact.email}.
    | It's {contact.email}.

scenario: internal_meeting project_update
summary: The team reviewed progress on {project}; the backend work is on track.
@meeting_open
p1: So the goal today is a quick update on {project}. {p2.first}, want to start?
  | First up, {project}. {p2.first}, where are we?
p2: Sure. The backend work is done, we're on track for {day}.
  | Backend is finished, so we're still on track for {day}.
p1: Great. Any blockers?
  | Nice. Anything blocking you?
p2: We still need the API credentials from {client}. I emailed {contact} about it.
  | Just one. {client} hasn't sent the API keys yet. I've pinged {contact} twice.
?p3: I know {contact.first}, I can ping them too.
p1: Thanks. And the design side?
p3: The mockups are in the shared folder, {url}.
  | Mockups are done, they're up on {url}.
ending: follow_up_needed
summary: The main blocker is API credentials from the client.
action: Chase the client contact for the API credentials.
action: Review the design mockups before the next meeting.
p1: Okay, so the main risk is the credentials. Let's chase that today.
ending: resolved
summary: The client sent the missing API credentials during the meeting.
action: Review the design mockups before the next meeting.
p2: Oh, actually {contact.first} just replied, we have the credentials now.
p1: Perfect, then we're unblocked.

scenario: internal_meeting planning
summary: The team met to set priorities for {quarter}.
@meeting_open
p1: This is our {quarter} planning session. We need to pick the top priorities.
  | Okay, {quarter} planning. Let's agree on what goes first.
p2: I'd put {feature} first, customers keep asking for it.
  | For me it's {feature}. It's the top request from customers.
p3: Agreed, but we also promised {client} the reporting changes.
p1: Right. Who's the contact there again?
p3: {contact}, their operations lead. The email is {contact.email}.
?p2: We could also move the team in {city} onto the migration.
ending: follow_up_needed
summary: The team chose {feature} and the client's reporting changes as priorities.
action: Draft the plan for {feature}.
action: Confirm the reporting timeline with the client contact.
p1: Okay, {feature} and the reporting changes it is. I'll draft the plan.
ending: meeting_scheduled
summary: The team could not agree and scheduled a follow-up session.
action: Schedule a follow-up planning session for {day}.
p1: We're not going to settle this today. Let's meet again on {day}.

scenario: internal_meeting incident_review
summary: The team reviewed an outage caused by a database server running out of disk space.
@meeting_open
p1: Let's go over yesterday's outage. {p2.first}, what happened?
  | So, the outage. {p2.first}, can you walk us through it?
p2: Around {time}, the database server at {ip} ran out of disk and the API timed out.
p3: The first alert went to the old on-call rotation, so we missed it.
  | The alert fired on {url}, but it went to the old on-call rotation.
p1: How long were we down?
p2: About forty minutes. It's all written up in ticket {ticket}.
ending: resolved
summary: Disk space was freed and the alert routing was fixed.
action: Add disk space alerts for the database servers.
action: Update the on-call rotation in the monitoring tool.
p1: And it's fixed now?
p2: Yes, we freed up space and fixed the alert routing.
ending: escalated
summary: The root cause points to the storage vendor, so the issue was escalated to them.
action: Open a support case with the storage vendor.
p3: It looks like a bug in the storage driver from {vendor}.
p1: Then let's escalate to {vendor} today.

scenario: internal_meeting hiring_discussion
summary: The team discussed candidates for the {position} role.
@meeting_open
p1: Let's go through the candidates for the {position} role.
  | We need to decide on the {position} candidates.
p2: I liked {contact}. Strong background, five years at {client}.
p3: Same. My only concern is they're in {city} and we need someone on site.
  | Agreed, though they live in {city}, and the role is on site.
p2: There's also {colleague}, but the technical interview was weaker.
ending: follow_up_needed
summary: The team agreed to move the first candidate to the final round.
action: Invite the first candidate to the final round and ask about relocation.
p1: Let's bring {contact.first} in for the final round and ask about relocating.
ending: no_decision
summary: The team decided to keep interviewing before choosing.
action: Keep the role open and schedule more interviews.
p1: I don't think we're there yet. Let's keep interviewing.

scenario: internal_meeting client_escalation
summary: The team discussed a client who is unhappy with errors after the last release.
@meeting_open
p1: I wanted to talk about {client}. They're unhappy with the last release.
  | We have an unhappy customer: {client}, since the last release.
p2: Yeah, {contact} called me yesterday, they're seeing errors in the export.
p3: Is it all users or just a few?
p2: Just their admin account, username {contact.user}.
p1: Do we have a ticket?
p2: Yes, {ticket}.
  | Yep, it's {ticket}.
ending: escalated
summary: The issue was escalated to engineering as a priority bug.
action: Engineering to fix the export errors as a priority bug.
p1: Let's escalate it to engineering as a priority one.
ending: resolved
summary: A fix was already deployed and the client contact will be told.
action: Let the client contact know the fix is live.
p3: Actually, we deployed a fix this morning.
p1: Great, {p2.first}, can you let {contact.first} know?

scenario: internal_meeting office_move
summary: The team planned the move to a new office next month.
@meeting_open
p1: Quick one today, the office move. We're moving to {addr} in {city} next month.
  | So the new office is confirmed: {addr}, in {city}. We move next month.
p2: Do we know the date yet?
p1: Facilities is aiming for the end of next month.
p3: IT needs to set up the network first. The new gateway will be {ip}.
p2: And who's handling the movers?
p1: {colleague} from facilities. Their number is {colleague.phone}.
ending: follow_up_needed
summary: IT will set up the network before the move.
action: IT to configure the network at the new office.
action: Facilities to confirm the moving date.
p3: I'll get the network sorted before the move.

scenario: one_to_one performance_review
summary: The manager held a mid-year review and praised the employee's work on {project}.
@one_to_one_open
mgr: So this is your mid-year review. Overall you've done really well on {project}.
   | Let's do your mid-year review. Your work on {project} has been great.
emp: Thanks, that means a lot.
mgr: The one area to work on is documentation and handoffs.
emp: That's fair. I've been heads down on delivery.
?mgr: {colleague} mentioned the handoff to their team was a bit rough.
ending: follow_up_needed
summary: They agreed on a plan to improve documentation.
action: Employee to write handoff notes for each release.
emp: I'll start writing handoff notes for every release.
mgr: Sounds good.

scenario: one_to_one career_development
summary: The employee asked about growing into a lead role.
@one_to_one_open
emp: I wanted to talk about growth. I'm interested in moving toward a lead role.
   | Can we talk about my career path? I'd like to lead a team one day.
mgr: I think that's realistic. What kind of support would help?
emp: Maybe a mentor, and a chance to lead the next project.
mgr: {colleague} runs the leadership program. Their email is {colleague.email}.
ending: follow_up_needed
summary: The manager will introduce the employee to the leadership program.
action: Manager to introduce the employee to the leadership program lead.
mgr: I'll introduce you two this week.
emp: Thank you.

scenario: one_to_one workload_check_in
summary: The employee said they are overloaded with project work and support duty.
@one_to_one_open
emp: To be honest, I'm stretched thin. I'm on {project} and also covering support.
   | I'm a bit underwater. Between {project} and support I'm doing two jobs.
mgr: Thanks for telling me. What's taking the most time?
emp: The support rotation, mostly tickets like {ticket} that drag on.
ending: resolved
summary: The manager took the employee off the support rotation for two weeks.
action: Remove the employee from the support rotation for two weeks.
mgr: Let's take you off the rotation for two weeks. {colleague.first} can cover.
emp: That would really help.
ending: follow_up_needed
summary: The manager will look for someone to share the support work.
action: Manager to find a second person for the support rotation.
mgr: Let me talk to {colleague} about sharing the rotation.
emp: Thanks, I appreciate it.

scenario: one_to_one onboarding
summary: The manager checked in on a new hire, whose VPN access is not working yet.
@one_to_one_open
mgr: Welcome to the team! How's the first week been?
emp: Good, still setting things up. My laptop isn't on the VPN yet.
mgr: IT sent instructions to {emp.email}. Your username is {emp.user}, right?
emp: Yes, {emp.user}. But the VPN address {ip} doesn't connect.
ending: escalated
summary: The manager asked IT to fix the VPN access.
action: IT to fix the new hire's VPN access.
mgr: Let me ping {colleague} in IT right now.

scenario: one_to_one relocation_request
summary: The employee asked to keep working remotely after moving to another city.
@one_to_one_open
emp: I wanted to let you know we're planning to move to {city} this summer.
   | Some news: we're moving to {city} later this year.
mgr: Congratulations! Are you hoping to work remotely?
emp: Yes, if possible. I'd keep the same hours.
ending: follow_up_needed
summary: The manager supports remote work, and HR needs the new address for payroll.
action: Employee to send the new address to HR for payroll.
mgr: I think that can work. HR will need your new address for payroll.
emp: Sure, it'll be {emp.addr}, {city}.
ending: no_decision
summary: The manager needs to check the remote work policy before deciding.
action: Manager to check the remote work policy and reply.
mgr: Let me check the remote policy and get back to you.

scenario: one_to_one payroll_issue
summary: The employee reported a short paycheck caused by wrong tax details in payroll.
@one_to_one_open
emp: My last paycheck was short. I think the tax withholding is wrong.
mgr: Did you talk to payroll?
emp: I did. They have the wrong social security number on file.
mgr: What should it be?
emp: It's {emp.ssn}. And my employee ID is {emp.empid}.
ending: escalated
summary: The manager passed the correction to payroll.
action: Payroll to correct the employee's tax record and reissue the paycheck.
mgr: I'll send that to {colleague} in payroll today.

scenario: voicemail callback_request
summary: The caller left a message asking for a call back about a recent request.
caller: Hi {callee.first}, this is {caller} from {org}.
      | Hey {callee.first}, it's {caller.first} over at {org}.
?caller: That's {caller.first}, {caller.first:spell}.
caller: I'm calling about your recent request, I have a couple of questions.
      | I got your request and just need a couple of details.
caller: Could you call me back at {caller.phone}? Again that's {caller.phone}. Thanks.
      | My number is {caller.phone}. That's {caller.phone}. Thanks, bye.
ending: callback_requested
summary: The caller asked to be called back.
action: Call the caller back about the request.

scenario: voicemail appointment_confirmation
summary: The caller left a message confirming an upcoming appointment.
caller: Hi, this message is for {callee}. This is {caller.first} from {org}.
      | Hello {callee}, {caller.first} calling from {org}.
caller: I'm calling to confirm your appointment on {day} at {time}, at {org.addr}.
caller: If you need to reschedule, call us at {org.phone}. See you then.
ending: information_shared
summary: The appointment was confirmed; rescheduling needs a call back.
action: Attend the appointment or call to reschedule.

scenario: voicemail payment_reminder
summary: The caller left a reminder about a past-due balance of {amount}.
caller: Hello, this is a message for {callee} from {org} billing.
caller: We're calling about account {acct}. There's a balance of {amount} past due.
      | Your account, {acct}, has {amount} past due.
caller: You can pay online at {org.url} or call us at {org.phone}. Thank you.
ending: callback_requested
summary: The caller asked for payment online or a call back.
action: Pay the past-due balance or call billing.

scenario: voicemail order_update
summary: The caller left a message that a back-ordered {product} is in stock.
caller: Hi {callee.first}, this is {caller.first} from {org} about your order {order}.
caller: The {product} you ordered is back in stock and we can ship it to {callee.addr}.
caller: Give us a call at {org.phone} or email me at {caller.email} to confirm.
ending: callback_requested
summary: The caller needs a confirmation before shipping.
action: Confirm the shipment by phone or email.

scenario: voicemail sales_follow_up
summary: The caller followed up after meeting the recipient at a conference.
caller: Hi {callee.first}, {caller} here with {org}. We met at the conference in {city}.
caller: I wanted to follow up on {offering}. I can set up a quick demo whenever works.
caller: My cell is {caller.phone}, or email me at {caller.email}. Talk soon.
ending: callback_requested
summary: The caller offered a demo and asked to be contacted.
action: Reply to the caller about a demo.

scenario: voicemail ticket_update
summary: The help desk left an update on a support ticket about a password reset.
caller: Hi, this is {caller.first} from the {org} help desk, calling for {callee.first}.
caller: It's about ticket {ticket}. We reset the password for your account {callee.user}.
caller: A temporary password went to {callee.email}. Call {org.phone} if you need us.
ending: information_shared
summary: The password was reset and a temporary password was emailed.
action: Log in with the temporary password and set a new one.

"""

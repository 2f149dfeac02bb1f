// Package publish turns accepted feed items into content on the service,
// each exactly once, and keeps published content in step with its source.
//
// # Accept: what is new
//
// The poller hands every 200 fetch to [Publisher.Accept], which diffs the
// items against the store ([dedupe.Store]) and, in one atomic step, queues
// new and changed items in the durable outbox and stores the feed's
// validators. Accept returning nil means the items are durable; on an
// error (the store is unreachable, say) nothing is published and the
// validators stay as they were, so the next poll sees the same items again
// and nothing is skipped. A poll with nothing new costs one store round
// trip; a poll with news, two.
//
// The first sight of a feed (no records, no accepted poll) publishes the
// FeedOptions.InitialItems newest items (by publish date; undated items
// rank after dated ones, in feed order) and records the rest as seen only.
// Seen-only items are published later only by a backfill
// ([Publisher.Backfill]: items published at or after a date).
//
// Per item: a new external id is queued for a POST; a changed hash queues
// a PUT (or, while the first POST is still queued, replaces its payload);
// the same hash does nothing. An item that leaves the feed and comes back
// is known by its record (kept for the store's retention after it left)
// and is not posted again.
//
// # Reconcile mode: the API is the source of truth when the store forgets
//
// The store keeps an epoch marker ([dedupe.Reconciler]): a random id
// written once, when a store without one is first used. A store that is
// new, or that lost its data (a Redis emptied by a restart without
// persistence or a FLUSHALL, a failover to an empty replica, an embedded
// file deleted), has no marker or another one. [Publisher.WatchStore]
// reads it every EpochInterval, and Accept reads it whenever a feed looks
// new to the store; a marker gone or changed under a running publisher
// puts every feed in reconcile mode and runs Options.OnStoreLoss (the
// worker has the poller fetch every feed in full again, since the store's
// validators and outbox are gone).
//
// A feed in reconcile mode, and any feed the store has never seen, looks
// its items that have no record up on the API before any of them is
// posted: GET /v3/content with filters_json {"external_id":{"in":"a,b,c"}},
// one request per 100 items; when the service refuses or ignores the
// filter, the content pages are read instead, once for the whole fetch
// (within the budget of the look-up scan). What is found is recorded as
// published with its content id, so the same version is neither posted
// nor put and a later edit is a PUT; an item whose title on the service
// differs from the feed's is queued as an update at once. Only then are
// the others queued. On a feed the store had never seen, the items not
// found are published when they rank (newest first) among the
// InitialItems newest or above the oldest item the API has, and recorded
// as seen only below it: those are the older items its first sight left
// unpublished. A feed leaves reconcile mode after one accepted fetch.
//
// Look-ups after a loss noticed under a running publisher wait until
// SendTimeout has passed since, so that a POST in flight when the data
// was lost has landed (or failed) and is found. After such a loss an item
// that cannot be verified (a service that cannot be searched, with more
// content than the scan may read) is never posted: the feed's polls fail
// until it can be. A store found without a marker at start may be a new
// deployment: its look-ups are made, but there an unverifiable look-up
// leaves first sight as it always was (the newest InitialItems posted).
//
// # Run: claim, send, record
//
// [Publisher.Run] runs Workers deliveries at a time, claiming due entries a
// batch at a time (one batch sent while the next waits) and applying the
// store operations of deliveries that reach the store together (claim
// checks and outcomes) in one round trip when the store can
// ([dedupe.ClaimBatcher]); each is still its own atomic step. Each outbox
// entry is delivered by one worker of one process at a time:
//
//  1. claim: the store claims due entries (SET NX with ClaimTTL on Redis)
//     and, for items without a content id, sets the pending mark in the
//     same step, before any request. Every claim call has an owner of its
//     own (the process's Owner and a sequence number), so a process never
//     mistakes a claim that lapsed for the one it took again since;
//  2. check: right before the send, the claim must still be held; the
//     check extends it by a whole ClaimTTL (compare-and-pexpire) and reads
//     the record again. A claim no longer held means another worker owns
//     the item: it is dropped unsent. A pending mark the claim did not set
//     itself (set by anyone before it) leads to the look-up below; a
//     content id recorded meanwhile (by a worker whose claim lapsed after
//     its POST) turns the POST into a PUT. A check made less than a moment
//     ago (250ms, or ClaimTTL/8 if shorter) stands for this one: the claim
//     itself, or a check that rode the round trip recording the sender's
//     previous outcome. So an item sent at once costs no extra round trip,
//     and one that waited is checked;
//  3. send: POST /v3/{type} for an item without a content id, PUT
//     /v3/{type}/{id} for one with. The send runs under SendTimeout, at
//     most half of ClaimTTL, so the checked claim outlasts it;
//  4. record: the content id and the hash the service now has; the pending
//     mark, the claim and the outbox entry are cleared in one step. If the
//     feed changed while the item was in flight, the entry stays, due at
//     once, as an update. An outcome recorded after the claim lapsed keeps
//     only a content id the API gave; the rest belongs to the claim's new
//     holder. A delivery is reported (log, metrics, Observer) only once its
//     outcome is recorded. On a store that can hold outcomes for company
//     ([dedupe.LaterClaimBatcher]: the embedded store, to share a commit
//     with its next write, usually the next claim; Redis, to share a round
//     trip) the sender does not wait: it hands the outcome over and takes
//     its next item, and the outcome is recorded within milliseconds.
//     Until then the claim and the pending mark hold, so nobody else sends
//     the item, and a crash in between is the crash after a send described
//     below; a stop, and the end of a drain, wait for every outcome handed
//     over (handover.go).
//
// Between claim and check an item never waits more than half of ClaimTTL:
// one that waited that long for a sender, or that would wait longer for
// the API's Retry-After, is given back (due again when the Retry-After
// ends) rather than held while its claim runs out. Category resolution,
// the other wait before a send, runs under the send's timeout.
//
// A process that dies loses its claims before ClaimTTL with a store that
// keeps heartbeats (Redis, [dedupe.Heartbeats]; see heartbeat.go): while
// it delivers, each process refreshes its own heartbeat key (TTL
// HeartbeatTTL, the worker's publish.lease_ttl), and the claims of a
// process whose heartbeat is gone are taken by the next claim of another
// at once, their pending marks making it look them up first. A process
// claims and sends nothing unless its heartbeat outlasts the send, so no
// POST of a process taken over is still in flight. ClaimTTL stays the
// bound for a process alive but stuck.
//
// An ambiguous failure (timeout, broken connection, a 5xx or 409 answer to
// a POST) keeps the pending mark. A pending mark found when an item is
// claimed (after an ambiguous failure, or a crash between send and record)
// makes the worker look the item up by external_id (GET /v3/content with
// filters_json) before posting again: if it exists, it is recorded
// ("recovered") instead of posted, and a newer version follows as a PUT.
// This is what keeps the promise under commit-then-fail answers, restarts
// and SIGKILL.
//
// # Failures
//
//   - 429, 408, 401, 5xx and transport failures are retried with capped
//     exponential backoff and jitter (BaseBackoff, 100ms by default,
//     growing by half per failed attempt up to MaxBackoff, through
//     acs.RetryPolicy.Backoff), so the first retries of a transient
//     failure come within a second and only an item that keeps failing
//     waits long. Retrying is done here only, per item, through the
//     store, so a failing item holds no other back: the worker's acs
//     client makes one attempt per call. The next attempt time is stored
//     with the entry, so it survives restarts and is delivered even if
//     its feed answers 304 forever after. A failure with no answer waits
//     a send timeout before its look-up only when we stopped waiting (a
//     timeout): a reset or closed connection is retried soon.
//   - The circuit (gate.go) opens only when the service fails as a whole:
//     10 transient failures in a row across all workers (a 20% error rate
//     practically never does that). Open, it sends nothing for 0.5s
//     doubling to 5s, then one probe; items held meanwhile are given back
//     without counting an attempt, and all go once a probe succeeds.
//   - A drain (feedworker once) also waits for retries due within 10s,
//     unless the circuit is open, so a pass over a service failing now and
//     then leaves nothing queued.
//   - A Retry-After (429, or any answer carrying one) holds back every API
//     call of the process until it has passed, not just the one item: for
//     at most MaxBackoff, or a minute if that is longer (an absurd
//     Retry-After must not stop delivery; an ordinary one is honoured
//     even with a short MaxBackoff). The item itself is due again after
//     the Retry-After, capped at MaxBackoff.
//   - 401 is retried rather than dead-lettered: it is the credentials that
//     are wrong, not the item.
//   - Other 4xx answers (400, 403, 404 on create, 422) and requests the
//     client refuses to send are permanent: the item goes to the dead
//     letters with the API's reason ([Publisher.DeadLetters],
//     [Publisher.RetryDeadLetter], [Publisher.RetryDeadLetters]). A dead
//     item whose source changes is queued again by the next poll: the
//     change may fix what the API rejected. (A 403 to a request sent with
//     a reused token is first taken for an expired token by the acs
//     client, which fetches a new one and sends the request once more.)
//   - Two ambiguous failures are retried only so often: a 409 (to a POST,
//     the item may exist, so it is looked up before the next POST) and a
//     look-up that cannot tell whether the item exists ([ErrUnverifiable]:
//     external_id not searchable and too much content to read through).
//     After MaxUnresolved attempts in a row end the same such way, the item
//     goes to the dead letters with the reason, for an operator to decide,
//     its pending mark kept. An item that cannot be looked up is never
//     posted blind.
//   - A 2xx answer whose body cannot be read (acs.ErrUnreadable) is not
//     transient. After a POST the item is taken as possibly created (its
//     pending mark stays) and looked up once by external_id: found, it is
//     recorded; if that answer cannot be read either, the item goes to
//     the dead letters at once with both reasons ("the service answered
//     201 but its body could not be read: field id: ..."), for
//     `feedworker deadletters retry` once fixed, which looks it up before
//     posting. Other unreadable answers (a look-up alone, the categories)
//     count in the run above. An unreadable answer to an update is an
//     update done. Each feed and cause is logged at ERROR once (again
//     after an hour), counted in feedworker_unreadable_answers_total and
//     listed by [Publisher.UnreadableAnswers] for the status page.
//   - 404 on an update means the content was deleted on the service. With
//     FeedOptions.RecreateDeleted the item is posted again; otherwise it is
//     recorded as removed and left alone for good, edits included, since
//     someone deleted it on purpose.
//   - With the store unreachable nothing is claimed, so nothing is sent;
//     Run retries with backoff and resumes by itself. An outcome that
//     cannot be recorded is retried for a while; past that, the claim
//     expires and the pending mark leads to a look-up.
//
// # Shutdown
//
// When Run's context is cancelled it claims nothing more; items claimed
// but not yet sent are given back; sends in flight run on a context that
// is not cancelled with Run's, for up to ShutdownGrace, and record their
// outcome. Outcomes handed over (the embedded store) are waited for within
// the same grace; a store write already under way when it ends still gets
// its own bound (15 s a write, so a stuck disk can hold a stop for about
// the grace and two of those): an outcome left unrecorded is the crash
// after a send, looked up before it is sent again. [Publisher.Drain] delivers what is due now and returns, for
// `feedworker once`.
//
// # Categories
//
// Category names are resolved to ids through GET /v3/category (pages of
// 100, the spec's default, since a server may serve fewer than asked
// without saying so), cached and fetched again on a miss (at most once per
// CategoryTTL). Unknown names are
// created when FeedOptions.CreateCategories is set (under a store lease, so
// two workers do not create the same name) and otherwise dropped with a
// warning. Resolution happens at send time, in whichever process sends.
//
// # Dates and types
//
// A payload's missing publish date becomes the item's first-seen time, kept
// in its record, so a later PUT sends the same date (see
// transform.Payload.ForSend). An update goes to the type the content was
// created with; fields that type lacks are dropped.
//
// # Updates
//
// A PUT keeps the service in step with the source: every text field the
// type has is sent, "" when the source has none, and every list (categories,
// segments), [] when empty, so what the source dropped is dropped on the
// service. A create stays minimal. Left out when unset, and so kept as they
// are on the service, are the title (required by the service), timestamps
// (they have no empty form in the client) and booleans and refs (the spec
// gives them no null or default, and a value of our choosing would change
// who sees the item); see convert.go.
//
// # Metrics
//
// feedworker_items_total{feed,outcome} (new, duplicate, updated, seen, and
// failed for payloads Accept drops; shared with the worker, which counts
// filtered and its own failed),
// feedworker_publish_requests_total{type,outcome} (created, updated,
// recovered, retry, dead_letter, removed, deleted),
// feedworker_store_operation_duration_seconds{op} (op renew_claim is the
// check before a send that needed its own round trip; op settle a
// sender's wait for its outcome to be recorded, op settle_later an
// outcome handed over until recorded, its wait for company included),
// feedworker_store_errors_total{op}, feedworker_outbox_depth,
// feedworker_dead_letters, feedworker_backlog_waits_total, and for
// reconcile mode
// feedworker_reconcile_items_total{feed,outcome} (found, new, seen),
// feedworker_reconcile_lookups_total{kind} (filter, scan: GET requests),
// feedworker_reconcile_passes_total and
// feedworker_reconcile_store_losses_total.
package publish

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
// # Run: claim, send, record
//
// [Publisher.Run] runs Workers deliveries at a time, claiming due entries a
// batch at a time (one batch sent while the next waits) and recording the
// outcomes of deliveries that finish together in one store round trip
// when the store can ([dedupe.SettleBatcher]); each outcome is still its
// own atomic step. Each outbox entry is delivered by one worker of one
// process at a time:
//
//  1. claim: the store claims due entries (SET NX with ClaimTTL on Redis)
//     and, for items without a content id, sets the pending mark in the
//     same step, before any request;
//  2. send: POST /v3/{type} for an item without a content id, PUT
//     /v3/{type}/{id} for one with;
//  3. record: the content id and the hash the service now has; the pending
//     mark, the claim and the outbox entry are cleared in one step. If the
//     feed changed while the item was in flight, the entry stays, due at
//     once, as an update.
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
//     exponential backoff and jitter (BaseBackoff doubling up to
//     MaxBackoff). The next attempt time is stored with the entry, so it
//     survives restarts and is delivered even if its feed answers 304
//     forever after.
//   - A Retry-After (429, or any answer carrying one) holds back every API
//     call of the process until it has passed, not just the one item.
//   - 401 is retried rather than dead-lettered: it is the credentials that
//     are wrong, not the item.
//   - Other 4xx answers (400, 403, 404 on create, 422) and requests the
//     client refuses to send are permanent: the item goes to the dead
//     letters with the API's reason ([Publisher.DeadLetters],
//     [Publisher.RetryDeadLetter], [Publisher.RetryDeadLetters]). A dead
//     item whose source changes is queued again by the next poll: the
//     change may fix what the API rejected.
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
// outcome. [Publisher.Drain] delivers what is due now and returns, for
// `feedworker once`.
//
// # Categories
//
// Category names are resolved to ids through GET /v3/category, cached and
// fetched again on a miss (at most once per CategoryTTL). Unknown names are
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
// # Metrics
//
// feedworker_items_total{feed,outcome} (new, duplicate, updated, seen, and
// failed for payloads Accept drops; shared with the worker, which counts
// filtered and its own failed),
// feedworker_publish_requests_total{type,outcome} (created, updated,
// recovered, retry, dead_letter, removed),
// feedworker_store_operation_duration_seconds{op},
// feedworker_store_errors_total{op}, feedworker_outbox_depth and
// feedworker_dead_letters.
package publish

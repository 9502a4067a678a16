// Package receipts is the one home of the receipt vocabulary: the seven
// constraints in table order, the enforcement tiers, the receipt statuses,
// the delivery channels and the Delivery record, the Receipt itself, the
// Refusal that ends a run with its two codes, the --isolation and
// --require policies, the negotiation of a request against what the
// sandbox verified, and the audit view (Report) of a recorded run. The
// transcript and control codecs and the supervisor use these types and
// constants; none of them restates one.
//
// Negotiate never claims a tier stronger than the mechanism its caller
// reports as checked, and it stops at the first constraint it cannot
// apply. The package imports only config, whose constraint values (the
// network modes) it negotiates, so every other package may import it.
package receipts

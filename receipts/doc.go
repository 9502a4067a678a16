// Package receipts is the leaf vocabulary of termverify receipts: the seven
// constraints in table order, the enforcement tiers, the receipt statuses and
// delivery channels, and the negotiation of a request against what the host
// can give. It imports nothing else of this module, so every other package
// may import it.
package receipts

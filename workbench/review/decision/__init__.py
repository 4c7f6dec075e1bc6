"""The decision: policy, sign-off, guardrails, validation matrix, owners and closure."""

package outbox

import "slices"

// Topics are the event types of the contract, in its order.
var Topics = []string{
	"blog_post.published",
	"blog_post.translated",
	"social_post.published",
	"social_post.failed",
	"order.created",
	"order.paid",
	"order.fulfilled",
	"order.cancelled",
	"order.refunded",
	"booking.confirmed",
	"booking.cancelled",
	"booking.completed",
	"content.changed",
	"content.published",
	"image.generated",
	"connect.account_updated",
}

// ValidTopic reports whether t is a topic of the contract.
func ValidTopic(t string) bool { return slices.Contains(Topics, t) }

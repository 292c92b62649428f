// examples/webhook-route.ts
// app/api/plinth/route.ts: a Next.js route handler (any runtime with
// Request, Response and WebCrypto: Node, edge, Deno, Workers).
import { verifyWebhook, WebhookVerificationError, type WebhookEvent } from "@plinth/sdk";

export async function POST(request: Request): Promise<Response> {
  const payload = await request.text(); // the raw body: verify it before parsing
  let event: WebhookEvent;
  try {
    event = await verifyWebhook({
      payload,
      header: request.headers.get("X-Service-Signature"),
      secret: process.env.PLINTH_WEBHOOK_SECRET ?? "",
    });
  } catch (err) {
    if (err instanceof WebhookVerificationError) {
      return new Response(err.message, { status: 400 });
    }
    throw err;
  }
  // A retry of a delivery carries the same X-Service-Delivery: a receiver
  // that must act once keeps the ids it handled.
  switch (event.type) {
    case "order.paid":
      await fulfil(event.data.number, event.data.total, event.data.customer.email);
      break;
    case "content.changed":
      await refresh(`content:${event.data.key}:${event.data.lang}`);
      break;
    case "blog_post.published":
      await refresh(`blog:${event.data.slug}`);
      break;
  }
  return new Response(null, { status: 204 });
}

async function fulfil(orderNumber: string, total: number, email: string): Promise<void> {
  console.log(`order ${orderNumber} paid: ${total} from ${email}`);
}

async function refresh(tag: string): Promise<void> {
  console.log(`refresh ${tag}`);
}

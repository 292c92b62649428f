// @plinth/sdk: the typed client of the Plinth API. The types come from the
// OpenAPI document (central/openapi.json in the Plinth repository),
// generated into openapi.ts by `npm run generate`.

export { createClient, createPublicClient } from "./client.js";
export type { ClientOptions, Paths, PlinthClient, PlinthPublicClient, PublicClientOptions, PublicPaths } from "./client.js";
export type { ListItem, ListPath, PaginateOptions, Paginator } from "./paginate.js";
export { isProblem, ProblemError } from "./problem.js";
export type { Problem } from "./problem.js";
export { streamJob, waitForJob } from "./jobs.js";
export type { Job, JobEvent, StreamJobOptions, WaitForJobOptions } from "./jobs.js";
export { SIGNATURE_HEADER, verifyWebhook, WebhookVerificationError, webhookTopics } from "./webhook.js";
export type { ContentChange, ContentPublished, VerifyWebhookOptions, WebhookData, WebhookEvent, WebhookTopic, WebhookVerificationReason } from "./webhook.js";
export type { FetchLike } from "./retry.js";
export type { components, operations, paths } from "./openapi.js";

/** Schemas are the named schemas of the API (Schemas["Page"], Schemas["CreateProductRequest"], …). */
export type Schemas = import("./openapi.js").components["schemas"];

import type { components } from "./openapi.js";

/**
 * Problem is an error answer of the API (RFC 9457 problem details):
 * branch on code, never on title or detail. insufficient_credits adds cost
 * and balance; validation_failed adds errors, messages by field.
 */
export type Problem = components["schemas"]["Problem"];

/** isProblem tells whether error (an openapi-fetch error, say) is a Problem. */
export function isProblem(error: unknown): error is Problem {
  if (typeof error !== "object" || error === null) {
    return false;
  }
  const p = error as Record<string, unknown>;
  return typeof p.status === "number" && typeof p.code === "string" && typeof p.title === "string" && typeof p.type === "string";
}

/**
 * ProblemError is thrown by the helpers that do not hand back openapi-fetch's
 * { data, error } (streamJob, waitForJob) when the server refuses: problem
 * is the answer when it is a Problem.
 */
export class ProblemError extends Error {
  override name = "ProblemError";
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The answer's problem details, when it had them. */
  readonly problem: Problem | undefined;

  constructor(status: number, body: unknown) {
    const problem = isProblem(body) ? body : undefined;
    super(problem ? `${status} ${problem.code}: ${problem.detail ?? problem.title}` : `the server answered ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

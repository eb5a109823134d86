/**
 * A provider's host check as its WaitReady diagnostics report it (anolis executable profile v1,
 * sec. 3 and 6): `host_check` is "ok" or "unmet", and when unmet `host_unmet` summarises the unmet
 * requirements as `id: detail; id: detail` (the anolis provider SDK's wording). A provider that
 * also wants the remedies shown may add `host_requirements`: the sec. 6 `--check-host` envelope
 * (or just its `requirements` array) as JSON; its unmet entries are then listed instead of the
 * summary's. Requirement ids and texts are the provider's: the runtime only shows them.
 */
import { type HostCheckView, type HostRequirementView, providerTextWithin } from "../common/mod.ts";

/** The WaitReady diagnostics keys read here. */
export const HOST_CHECK_KEY = "host_check";
export const HOST_UNMET_KEY = "host_unmet";
export const HOST_REQUIREMENTS_KEY = "host_requirements";

/** Most unmet requirements kept per provider (the rest are dropped; the summary keeps them all). */
export const MAX_HOST_REQUIREMENTS = 16;
/** Longest id, detail or remedy kept (longer is cut, marked with an ellipsis). */
export const MAX_HOST_REQUIREMENT_CHARS = 300;
/** Longest `host_unmet` summary kept. */
export const MAX_HOST_SUMMARY_CHARS = 1000;

/** The host check a provider's WaitReady diagnostics report; null when they report none. */
export function hostCheckOf(
  diagnostics: Readonly<Record<string, string>> | null,
): HostCheckView | null {
  if (!diagnostics) return null;
  const said = diagnostics[HOST_CHECK_KEY]?.trim().toLowerCase();
  const summary = diagnostics[HOST_UNMET_KEY] ?? "";
  // `host_unmet` alone says as much as `host_check: unmet`.
  const unmet = said === "unmet" || (said !== "ok" && summary.trim() !== "");
  if (!unmet) return said === "ok" ? { status: "ok", summary: "", unmet: [] } : null;
  const listed = requirementsFromJson(diagnostics[HOST_REQUIREMENTS_KEY]);
  return {
    status: "unmet",
    summary: cut(summary, MAX_HOST_SUMMARY_CHARS),
    unmet: distinct(listed ?? requirementsFromSummary(summary)).slice(0, MAX_HOST_REQUIREMENTS),
  };
}

/**
 * Each requirement once: one the provider named twice, or two equal once cut to
 * MAX_HOST_REQUIREMENT_CHARS, is kept once (its first place). /metrics makes a series of each,
 * and a scrape holding the same series twice is rejected whole.
 */
function distinct(list: readonly HostRequirementView[]): HostRequirementView[] {
  const seen = new Set<string>();
  return list.filter((r) => {
    const key = JSON.stringify([r.id, r.detail, r.remedy]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** True when the diagnostics say the host is not ready for the provider. */
export function hostUnmet(diagnostics: Readonly<Record<string, string>> | null): boolean {
  return hostCheckOf(diagnostics)?.status === "unmet";
}

/**
 * The unmet entries of a `--check-host` envelope (or its requirements array) given as JSON; null
 * when absent or not of that shape (the summary is used then).
 */
function requirementsFromJson(text: string | undefined): HostRequirementView[] | null {
  if (text === undefined || text.trim() === "") return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const list = Array.isArray(parsed)
    ? parsed
    : isRecord(parsed) && Array.isArray(parsed.requirements)
    ? parsed.requirements
    : null;
  if (list === null) return null;
  const out: HostRequirementView[] = [];
  for (const r of list) {
    if (!isRecord(r) || typeof r.id !== "string" || r.id === "" || r.status !== "unmet") continue;
    out.push({
      id: cut(r.id, MAX_HOST_REQUIREMENT_CHARS),
      detail: typeof r.detail === "string" ? cut(r.detail, MAX_HOST_REQUIREMENT_CHARS) : "",
      remedy: typeof r.remedy === "string" ? cut(r.remedy, MAX_HOST_REQUIREMENT_CHARS) : "",
    });
  }
  return out;
}

/**
 * The requirements of a `host_unmet` summary, `id: detail; id`: split on "; ", then at the first
 * ": " (a detail that itself holds "; " is read as two entries: the summary is for people).
 */
function requirementsFromSummary(summary: string): HostRequirementView[] {
  const out: HostRequirementView[] = [];
  for (const part of summary.split("; ")) {
    const text = part.trim();
    if (text === "") continue;
    const at = text.indexOf(": ");
    out.push({
      id: cut(at < 0 ? text : text.slice(0, at), MAX_HOST_REQUIREMENT_CHARS),
      detail: at < 0 ? "" : cut(text.slice(at + 2), MAX_HOST_REQUIREMENT_CHARS),
      remedy: "",
    });
  }
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * `text` within `max` UTF-16 units (longer: cut, with an ellipsis), well-formed: a lone surrogate
 * (or half a pair the cut split) is U+FFFD, as UTF-8 output writes it anyway, so two texts that
 * differ only there are equal here too.
 */
function cut(text: string, max: number): string {
  return providerTextWithin(text, max).toWellFormed();
}

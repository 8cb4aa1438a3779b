// The one place that talks to the service. The admin token lives in this module's memory only: never in
// storage, a cookie or a URL; it goes out as an Authorization header and is gone when the page is.

const root = document.body.dataset.apiRoot || "";
let token = null;
let graph = null; // the graph every call works on (X-Graph); null: the service's default graph

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? body.detail : `the service answered ${status}`);
    this.status = status;
    this.body = body;
  }
}

export function signedIn() {
  return token !== null;
}

export function signOut() {
  token = null;
  graph = null;
}

/** Work on this graph from now on (a name from the status's `graphs`), or null for the default graph. */
export function setGraph(name) {
  graph = name;
}

/** Keep the token only if the service accepts it; answers the status the check read. */
export async function signIn(candidate) {
  token = candidate;
  try {
    return await get("/consolidate/status");
  } catch (error) {
    token = null;
    throw error;
  }
}

export function get(path, query) {
  const search = query ? `?${new URLSearchParams(query)}` : "";
  return call("GET", path + search);
}

/** `headers`: a few more of the route's own (Idempotency-Key); the token and graph are always sent. */
export function post(path, body, headers = {}) {
  return call("POST", path, body ?? {}, headers);
}

export function remove(path) {
  return call("DELETE", path);
}

async function call(method, path, body, extraHeaders = {}) {
  if (token === null) throw new ApiError(401, { detail: "not signed in" });
  const headers = { ...extraHeaders, Authorization: `Bearer ${token}`, Accept: "application/json" };
  if (graph !== null) headers["X-Graph"] = graph;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(root + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit", redirect: "error",
    });
  } catch {
    // The browser's own failure text says nothing useful ("Failed to fetch"): say what happened in our words.
    throw new ApiError(0, { error: "unreachable", detail: "the service did not answer (is it running?)" });
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

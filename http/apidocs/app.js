// Renders /api/openapi.json as a list of operations grouped by tag. Plain DOM, no
// dependencies, no inline styles (the page's CSP allows only 'self').
"use strict";

function el(tag, text, children) {
  const e = document.createElement(tag);
  if (text) e.textContent = text;
  for (const c of children || []) e.appendChild(c);
  return e;
}

function resolve(spec, schema) {
  if (schema && schema.$ref) {
    const name = schema.$ref.split("/").pop();
    return { name, schema: spec.components.schemas[name] };
  }
  return { name: "", schema };
}

function schemaBlock(spec, title, schema) {
  const r = resolve(spec, schema);
  const d = el("details", null, [el("summary", title + (r.name ? " (" + r.name + ")" : ""))]);
  d.appendChild(el("pre", JSON.stringify(r.schema, null, 2)));
  return d;
}

function render(spec) {
  const groups = new Map();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || "Other";
      if (!groups.has(tag)) groups.set(tag, []);
      groups.get(tag).push({ path, method, op });
    }
  }
  const main = document.getElementById("ops");
  main.textContent = "";
  for (const tag of [...groups.keys()].sort()) {
    const section = el("section", null, [el("h2", tag)]);
    section.className = "card";
    section.dataset.tag = tag.toLowerCase();
    for (const { path, method, op } of groups.get(tag)) {
      const d = el("details", null, [el("summary", method.toUpperCase() + " " + path + "  —  " + (op.summary || ""))]);
      d.dataset.search = (method + " " + path + " " + tag + " " + (op["x-keyward-scope"] || "")).toLowerCase();
      d.appendChild(el("p", "Scope: " + (op["x-keyward-scope"] || "")));
      if (op.description) d.appendChild(el("p", op.description));
      for (const p of op.parameters || []) d.appendChild(el("p", "Parameter " + p.name + " (" + p.in + ")"));
      if (op.requestBody) {
        for (const [ct, m] of Object.entries(op.requestBody.content)) d.appendChild(schemaBlock(spec, "Body " + ct, m.schema));
      }
      for (const [status, resp] of Object.entries(op.responses || {})) {
        const content = resp.content && Object.values(resp.content)[0];
        if (content) d.appendChild(schemaBlock(spec, "Answer " + status, content.schema));
        else d.appendChild(el("p", "Answer " + status + ": " + resp.description));
      }
      section.appendChild(d);
    }
    main.appendChild(section);
  }
}

// The dashboard's stylesheet (same origin; its path carries the build's version, read from
// the dashboard page).
async function useDashboardStyle() {
  try {
    const html = await (await fetch("/")).text();
    const m = /href="([^"]*app\.css)"/.exec(html);
    if (!m) return;
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = m[1];
    document.head.appendChild(link);
  } catch (e) { /* the page reads without it */ }
}

document.addEventListener("DOMContentLoaded", async () => {
  useDashboardStyle();
  const res = await fetch("/api/openapi.json");
  const spec = await res.json();
  render(spec);
  document.getElementById("filter").addEventListener("input", (ev) => {
    const q = ev.target.value.toLowerCase();
    for (const d of document.querySelectorAll("details[data-search]")) d.hidden = q !== "" && !d.dataset.search.includes(q);
    // A tag with no operation left is hidden with its heading.
    let shown = 0;
    for (const s of document.querySelectorAll("section[data-tag]")) {
      const any = [...s.querySelectorAll("details[data-search]")].some((d) => !d.hidden);
      s.hidden = !any;
      if (any) shown++;
    }
    document.getElementById("none").hidden = shown > 0;
  });
});

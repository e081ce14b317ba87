// roi template editor: plain JS, no build step. Boxes live in millimetres on the reference page,
// as in the YAML; the canvas only scales them.
"use strict";

const $ = (id) => document.getElementById(id);
const NAME_RE = /^[a-z][a-z0-9_]{0,63}$/;
const COLOURS = { none: "#0060d0", valid: "#00a000", low: "#ff8c00", invalid: "#e00000" };
const HANDLE = 10; // canvas px

const state = {
  base: null, // the template without its fields
  fields: [],
  reference: null, // data: URL of the reference image
  img: null,
  selected: -1,
  results: {}, // field name -> result of the last try
  drag: null,
};

const canvas = $("canvas");
const ctx = canvas.getContext("2d");

function status(text, kind = "") {
  const el = $("status");
  el.textContent = text;
  el.className = kind;
}

async function api(method, url, body) {
  const opts = { method, headers: {} };
  if (body instanceof FormData) opts.body = body;
  else if (body !== undefined) {
    opts.body = JSON.stringify(body);
    opts.headers["Content-Type"] = "application/json";
  }
  const res = await fetch(url, opts);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (!res.ok) throw new Error((data && (data.detail || data.error)) || `${res.status} ${res.statusText}`);
  return data;
}

function readAsDataURL(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

// -- geometry --------------------------------------------------------------------------------

function ppm() { return canvas.width / state.base.page.width_mm; } // canvas px per mm

function eventMM(ev) {
  const rect = canvas.getBoundingClientRect();
  const x = ((ev.clientX - rect.left) * canvas.width) / rect.width;
  const y = ((ev.clientY - rect.top) * canvas.height) / rect.height;
  return { x: x / ppm(), y: y / ppm() };
}

function round1(v) { return Math.round(v * 10) / 10; }

function clampBox(b) {
  const W = state.base.page.width_mm, H = state.base.page.height_mm;
  let [x, y, w, h] = b;
  w = Math.max(0.5, Math.min(w, W)); h = Math.max(0.5, Math.min(h, H));
  x = Math.max(0, Math.min(x, W - w)); y = Math.max(0, Math.min(y, H - h));
  return [round1(x), round1(y), round1(Math.min(w, W - round1(x))), round1(Math.min(h, H - round1(y)))];
}

function hit(mm) {
  // a box's resize handle first (the selected one), then the smallest box under the point
  const k = HANDLE / ppm();
  if (state.selected >= 0) {
    const [x, y, w, h] = state.fields[state.selected].box;
    if (Math.abs(mm.x - (x + w)) < k && Math.abs(mm.y - (y + h)) < k) return { index: state.selected, handle: true };
  }
  let best = -1, area = Infinity;
  state.fields.forEach((f, i) => {
    const [x, y, w, h] = f.box;
    if (mm.x >= x && mm.x <= x + w && mm.y >= y && mm.y <= y + h && w * h < area) { best = i; area = w * h; }
  });
  return best >= 0 ? { index: best, handle: false } : null;
}

// -- drawing ---------------------------------------------------------------------------------

function resultClass(r) {
  if (!r) return "none";
  if (r.valid) return "valid";
  if ((r.errors || []).some((e) => e.startsWith("low recognition confidence") || e.startsWith("uncertain character"))) return "low";
  return "invalid";
}

function draw() {
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (!state.base) return;
  if (state.img) ctx.drawImage(state.img, 0, 0, canvas.width, canvas.height);
  const s = ppm();
  ctx.font = `${Math.max(11, Math.round(2.4 * s))}px sans-serif`;
  ctx.textBaseline = "bottom";
  state.fields.forEach((f, i) => {
    const [x, y, w, h] = f.box;
    const r = state.results[f.name];
    const colour = COLOURS[resultClass(r)];
    const sel = i === state.selected;
    ctx.lineWidth = sel ? 3 : 2;
    ctx.strokeStyle = colour;
    ctx.strokeRect(x * s, y * s, w * s, h * s);
    if (sel) {
      ctx.fillStyle = "rgba(255, 214, 0, 0.18)";
      ctx.fillRect(x * s, y * s, w * s, h * s);
      ctx.fillStyle = colour;
      ctx.fillRect((x + w) * s - HANDLE / 2, (y + h) * s - HANDLE / 2, HANDLE, HANDLE);
    }
    let tag = f.name;
    if (r) tag += `: ${r.value ?? r.raw ?? ""}`;
    const tw = ctx.measureText(tag).width + 6;
    ctx.fillStyle = colour;
    ctx.globalAlpha = 0.85;
    ctx.fillRect(x * s, y * s - Math.max(11, 2.4 * s) - 2, tw, Math.max(11, 2.4 * s) + 2);
    ctx.globalAlpha = 1;
    ctx.fillStyle = "#fff";
    ctx.fillText(tag, x * s + 3, y * s - 1);
  });
  const d = state.drag;
  if (d && d.mode === "new" && d.current) {
    const b = normBox(d.start, d.current);
    ctx.setLineDash([6, 4]);
    ctx.strokeStyle = COLOURS.none;
    ctx.lineWidth = 2;
    ctx.strokeRect(b[0] * s, b[1] * s, b[2] * s, b[3] * s);
    ctx.setLineDash([]);
  }
}

function normBox(a, b) {
  return [Math.min(a.x, b.x), Math.min(a.y, b.y), Math.abs(b.x - a.x), Math.abs(b.y - a.y)];
}

// -- the side panel --------------------------------------------------------------------------

function renderList() {
  const body = $("fields").querySelector("tbody");
  body.innerHTML = "";
  state.fields.forEach((f, i) => {
    const tr = document.createElement("tr");
    tr.dataset.name = f.name;
    if (i === state.selected) tr.className = "selected";
    const r = state.results[f.name];
    const cls = resultClass(r);
    const cells = [f.name, f.kind || "text", r ? `${r.value ?? ""}` : "", r ? (r.valid ? "✓" : "✗ " + (r.errors || []).join("; ")) : ""];
    cells.forEach((text, c) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (c === 2) td.className = "value";
      if (c === 3) td.className = `validity ${cls === "none" ? "" : cls}`;
      tr.appendChild(td);
    });
    tr.addEventListener("click", () => select(i));
    body.appendChild(tr);
  });
  $("yaml").textContent = JSON.stringify(templateForServer(), null, 2);
}

function renderForm() {
  const f = state.fields[state.selected];
  const form = $("field-form");
  form.querySelectorAll("input, select, button").forEach((el) => { el.disabled = !f; });
  if (!f) return;
  $("field-name").value = f.name;
  $("field-label").value = f.label || "";
  $("field-kind").value = f.kind || "text";
  $("field-allowlist").value = f.allowlist || "";
  $("field-regex").value = f.regex || "";
  $("field-required").checked = f.required !== false;
  ["x", "y", "w", "h"].forEach((k, j) => { $(`box-${k}`).value = f.box[j]; });
}

function select(i) {
  state.selected = i;
  renderForm();
  renderList();
  draw();
}

function refresh() { renderList(); draw(); }

function renameInRules(oldName, newName) {
  for (const rule of state.base.rules || []) {
    for (const key of ["terms", "fields"]) if (rule[key]) rule[key] = rule[key].map((n) => (n === oldName ? newName : n));
    if (rule.equals === oldName) rule.equals = newName;
  }
  if (state.base.qr && state.base.qr.fields && oldName in state.base.qr.fields) {
    state.base.qr.fields[newName] = state.base.qr.fields[oldName];
    delete state.base.qr.fields[oldName];
  }
  for (const party of state.base.parties || []) {
    if (party.name === oldName) party.name = newName;
    if (party.tax_id === oldName) party.tax_id = newName;
  }
  for (const f of state.fields) if (f.starts_with === oldName) f.starts_with = newName;
}

function dropFromRules(name) {
  state.base.rules = (state.base.rules || []).filter((r) => ![...(r.terms || []), ...(r.fields || []), r.equals].includes(name));
  if (state.base.qr && state.base.qr.fields) delete state.base.qr.fields[name];
}

function bindForm() {
  $("field-name").addEventListener("input", (ev) => {
    const f = state.fields[state.selected];
    if (!f) return;
    const value = ev.target.value.trim();
    ev.target.setCustomValidity(NAME_RE.test(value) ? "" : "[a-z][a-z0-9_]*");
    if (state.results[f.name]) { state.results[value] = state.results[f.name]; delete state.results[f.name]; }
    renameInRules(f.name, value);
    f.name = value;
    refresh();
  });
  const text = (id, key) => $(id).addEventListener("input", (ev) => {
    const f = state.fields[state.selected];
    if (!f) return;
    const v = ev.target.value;
    if (v.trim()) f[key] = v.trim(); else delete f[key];
    refresh();
  });
  text("field-label", "label");
  text("field-allowlist", "allowlist");
  text("field-regex", "regex");
  $("field-kind").addEventListener("change", (ev) => {
    const f = state.fields[state.selected];
    if (f) { f.kind = ev.target.value; refresh(); }
  });
  $("field-required").addEventListener("change", (ev) => {
    const f = state.fields[state.selected];
    if (f) { if (ev.target.checked) delete f.required; else f.required = false; refresh(); }
  });
  ["x", "y", "w", "h"].forEach((k, j) => $(`box-${k}`).addEventListener("change", (ev) => {
    const f = state.fields[state.selected];
    if (!f) return;
    const box = f.box.slice();
    box[j] = parseFloat(ev.target.value) || 0;
    f.box = clampBox(box);
    renderForm();
    refresh();
  }));
  $("delete-field").addEventListener("click", () => {
    const f = state.fields[state.selected];
    if (!f) return;
    dropFromRules(f.name);
    state.fields.splice(state.selected, 1);
    select(-1);
  });
}

// -- mouse -----------------------------------------------------------------------------------

function bindCanvas() {
  canvas.addEventListener("mousedown", (ev) => {
    if (!state.base) return;
    const mm = eventMM(ev);
    const h = hit(mm);
    if (h && h.handle) state.drag = { mode: "resize", index: h.index, start: mm, box: state.fields[h.index].box.slice() };
    else if (h) { select(h.index); state.drag = { mode: "move", index: h.index, start: mm, box: state.fields[h.index].box.slice() }; }
    else state.drag = { mode: "new", start: mm, current: null };
    ev.preventDefault();
  });
  window.addEventListener("mousemove", (ev) => {
    const d = state.drag;
    if (!d) return;
    const mm = eventMM(ev);
    if (d.mode === "new") d.current = mm;
    else {
      const f = state.fields[d.index];
      const dx = mm.x - d.start.x, dy = mm.y - d.start.y;
      const [x, y, w, h] = d.box;
      f.box = d.mode === "move" ? clampBox([x + dx, y + dy, w, h]) : clampBox([x, y, w + dx, h + dy]);
      renderForm();
    }
    draw();
  });
  window.addEventListener("mouseup", (ev) => {
    const d = state.drag;
    state.drag = null;
    if (!d) return;
    if (d.mode === "new") {
      const b = normBox(d.start, eventMM(ev));
      if (b[2] < 1 || b[3] < 1) { select(-1); return; } // a click on paper: deselect
      let n = state.fields.length + 1;
      while (state.fields.some((f) => f.name === `field_${n}`)) n += 1;
      state.fields.push({ name: `field_${n}`, box: clampBox(b), kind: "text" });
      select(state.fields.length - 1);
      $("field-name").focus();
      $("field-name").select();
      status(`New box field_${n}: name it and pick its kind.`);
    } else refresh();
  });
}

// -- templates -------------------------------------------------------------------------------

function templateForServer() {
  if (!state.base) return null;
  const name = $("name").value.trim() || state.base.name || "draft";
  const t = JSON.parse(JSON.stringify(state.base));
  t.name = name;
  t.fields = state.fields.map((f) => {
    const out = { name: f.name, box: f.box, kind: f.kind || "text" };
    for (const k of ["label", "allowlist", "regex", "normalizer"]) if (f[k]) out[k] = f[k];
    if (f.required === false) out.required = false;
    if (f.lines && f.lines !== 1) out.lines = f.lines;
    if (f.decimals != null && out.kind === "amount") out.decimals = f.decimals;
    if (f.printed_again) out.printed_again = f.printed_again; // kept as the template had it
    if (f.starts_with) out.starts_with = f.starts_with; // likewise: the field printed in column
    if (f.check) out.check = f.check; // likewise: the check of its structure (invoice_code, invoice_number, issue_date)
    if (f.absent_when) out.absent_when = f.absent_when; // likewise: where the form lacks it
    if (f.printed_as) out.printed_as = f.printed_as; // likewise: how only its value is printed
    return out;
  });
  // a field printed in column with another: drop the pairing a deletion broke
  const names = new Set(t.fields.map((f) => f.name));
  for (const f of t.fields) {
    const column = f.starts_with;
    if (column && (!names.has(column) || column === f.name)) delete f.starts_with;
  }
  if (!t.rules || !t.rules.length) delete t.rules;
  // a party pairs a name field with a tax_id field: drop those a deletion or a kind broke
  const kinds = Object.fromEntries(t.fields.map((f) => [f.name, f.kind]));
  t.parties = (t.parties || []).filter((p) => kinds[p.name] === "name" && kinds[p.tax_id] === "tax_id");
  if (!t.parties.length) delete t.parties;
  return t;
}

function setReference(dataURL) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => {
      state.img = img;
      state.reference = dataURL;
      const width = Math.min(img.naturalWidth, 1600);
      canvas.width = width;
      canvas.height = Math.round((width * state.base.page.height_mm) / state.base.page.width_mm);
      resolve();
    };
    img.onerror = () => reject(new Error("cannot show the reference image"));
    img.src = dataURL;
  });
}

async function loadTemplate(name) {
  status(`Loading ${name}…`);
  const data = await api("GET", `/ui/api/templates/${encodeURIComponent(name)}`);
  const { fields, ...base } = data.template;
  state.base = base;
  state.fields = fields;
  state.results = {};
  if (!data.reference) throw new Error(`template ${name} has no reference image`);
  await setReference(data.reference);
  $("name").value = name;
  select(-1);
  status(`Loaded ${name}: ${fields.length} fields. Draw a box to add one; save under a new name or tick overwrite.`, "ok");
}

async function loadSample(file) {
  const propose = $("propose").checked;
  status(propose ? `Reading ${file.name} and proposing fields (full-page OCR, a few seconds)…` : `Reading ${file.name}…`);
  const form = new FormData();
  form.append("file", file);
  const data = await api("POST", `/ui/api/reference?propose=${propose}`, form);
  const guess = file.name.toLowerCase().replace(/\.[a-z]+$/, "").replace(/[^a-z0-9_]+/g, "_").replace(/^[^a-z]+/, "");
  state.base = {
    name: NAME_RE.test(guess) ? guess : "new_layout",
    version: 1,
    title: `from ${file.name}`,
    page: data.page,
    registration: { method: "frame", match_threshold: 0.6, dpi: 200 },
    crop_margin_mm: 2.5,
  };
  state.fields = data.fields || [];
  state.results = {};
  await setReference(data.reference);
  $("name").value = state.base.name;
  select(-1);
  status(`Reference from ${file.name}: ${data.page.width_mm} × ${data.page.height_mm} mm, ${state.fields.length} fields proposed. Keep, rename, move or delete them.`, "ok");
}

async function tryScan() {
  const file = $("scan-file").files[0];
  if (!state.base) throw new Error("load a template or a sample first");
  if (!file) throw new Error("choose a scan to read");
  if (!state.fields.length) throw new Error("draw at least one field");
  status(`Reading ${file.name} with the template as drawn…`);
  const scan = await readAsDataURL(file);
  const data = await api("POST", "/ui/api/try", { template: templateForServer(), reference: state.reference, scan });
  state.results = data.fields || {};
  const valid = Object.values(state.results).filter((r) => r.valid).length;
  $("try-result").textContent = `${data.status}, match ${data.match_score.toFixed(2)}${data.message ? " — " + data.message : ""}; ${valid} of ${Object.keys(state.results).length} fields valid`;
  refresh();
  status(`Read ${file.name}: ${data.status}.`, data.status === "unmatched" ? "error" : "ok");
}

async function save() {
  if (!state.base) throw new Error("load a template or a sample first");
  const name = $("name").value.trim();
  if (!NAME_RE.test(name)) throw new Error("name the template: [a-z][a-z0-9_]*");
  const bad = state.fields.find((f) => !NAME_RE.test(f.name));
  if (bad) throw new Error(`field name ${JSON.stringify(bad.name)}: use [a-z][a-z0-9_]*`);
  const data = await api("POST", "/ui/api/save", { template: templateForServer(), reference: state.reference, overwrite: $("overwrite").checked });
  state.base.name = name;
  const warn = data.warnings && data.warnings.length ? ` Warnings: ${data.warnings.join("; ")}` : "";
  // the list first: rebuilt after "Saved" shows, it put the saved name back over a template
  // picked in between (and the next Load loaded the wrong one)
  await listTemplates(name);
  status(`Saved ${data.saved} (${data.fields} fields) to ${data.path}.${warn}`, "ok");
}

async function listTemplates(keep) {
  const list = await api("GET", "/templates");
  const sel = $("template-select");
  sel.innerHTML = '<option value="">— pick one —</option>';
  for (const t of list) {
    const o = document.createElement("option");
    o.value = t.name;
    o.textContent = `${t.name} (${t.fields} fields)`;
    sel.appendChild(o);
  }
  if (keep) sel.value = keep;
}

function guard(fn) {
  return async (...args) => {
    try { await fn(...args); } catch (e) { status(e.message || String(e), "error"); }
  };
}

bindForm();
bindCanvas();
renderForm();
$("load-template").addEventListener("click", guard(async () => {
  const name = $("template-select").value;
  if (!name) throw new Error("pick a template first");
  await loadTemplate(name);
}));
$("sample-file").addEventListener("change", guard(async (ev) => { if (ev.target.files[0]) await loadSample(ev.target.files[0]); }));
$("try").addEventListener("click", guard(tryScan));
$("save").addEventListener("click", guard(save));
document.addEventListener("keydown", (ev) => {
  if ((ev.key === "Delete" || ev.key === "Backspace") && ev.target === document.body && state.selected >= 0) $("delete-field").click();
});
guard(listTemplates)();
window.roiEditor = state; // for debugging in the browser console

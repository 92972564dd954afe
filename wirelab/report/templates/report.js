// wirelab report: waterfalls drawn on demand from the embedded data, and figure zoom.
// Every string from a HAR goes into the page through textContent only (never as markup).
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var node = document.getElementById("wirelab-data");
  var data = node ? JSON.parse(node.textContent) : { phases: [], parts: [], waterfalls: {} };
  // object row: [url, connection, start, blocked, dns, connect, ssl, send, wait, receive, status, size]
  var FIRST_PHASE = 3;
  // a waterfall's "why": its load's critical path, [from_ms, to_ms, part index into data.parts,
  // request index into its objects (-1: none)] (docs/why.md)
  var PARTS = data.parts || [];

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]); }
    if (parent) parent.appendChild(e);
    return e;
  }
  function title(parent, text) { var t = el("title", {}, parent); t.textContent = text; return t; }
  function shortUrl(url) {
    var m = /^[a-z0-9+.-]+:\/\/([^/]*)(.*)$/i.exec(url);
    var path = m ? (m[2] || "/") : url;
    var host = m ? m[1].split(".")[0] : "";
    var text = (host && host !== "www" ? host + ":" : "") + path;
    return text.length > 40 ? text.slice(0, 18) + "…" + text.slice(-21) : text;
  }
  function niceStep(span) {
    var raw = span / 8, pow = Math.pow(10, Math.floor(Math.log10(raw))), n = raw / pow;
    return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * pow;
  }

  function drawWaterfall(wf) {
    var objs = wf.objects.slice().sort(function (a, b) { return a[2] - b[2]; });
    var lanes = [], laneOf = {};
    objs.forEach(function (o) {
      if (!(o[1] in laneOf)) { laneOf[o[1]] = lanes.length; lanes.push({ conn: o[1], rows: [] }); }
      lanes[laneOf[o[1]]].rows.push(o);
    });
    var end = 0;
    objs.forEach(function (o) {
      var t = o[2];
      for (var i = FIRST_PHASE; i < FIRST_PHASE + data.phases.length; i++) t += o[i];
      end = Math.max(end, t);
    });
    var path = wf.why || [];
    path.forEach(function (s) { end = Math.max(end, s[1]); });
    end = end || 1;
    var labelW = 270, chartW = 860, rowH = 15, laneHead = 17, top = 22, bandH = path.length ? laneHead + rowH + 8 : 0;
    var height = top + lanes.reduce(function (h, l) { return h + laneHead + l.rows.length * rowH + 4; }, 0) + bandH + 6;
    var svg = el("svg", { viewBox: "0 0 " + (labelW + chartW + 20) + " " + height, class: "waterfall", role: "img" });
    title(svg, wf.title);
    var scale = chartW / end;
    var axis = el("g", { class: "axis" }, svg);
    var step = niceStep(end);
    for (var t = 0; t <= end + 1e-9; t += step) {
      var x = labelW + t * scale;
      el("line", { x1: x, x2: x, y1: top - 4, y2: height, stroke: "#eef0f3" }, axis);
      var lbl = el("text", { x: x, y: 12, "text-anchor": "middle" }, axis);
      lbl.textContent = (t >= 1000 ? (t / 1000).toFixed(t % 1000 ? 1 : 0) + " s" : Math.round(t) + " ms");
    }
    var y = top;
    lanes.forEach(function (lane, li) {
      var laneH = laneHead + lane.rows.length * rowH;
      if (li % 2 === 0) el("rect", { x: 0, y: y - 2, width: labelW + chartW + 20, height: laneH + 2, fill: "#f5f7fa" }, svg);
      var head = el("text", { x: 4, y: y + 12, "font-weight": "bold" }, svg);
      head.textContent = "connection " + lane.conn + " · " + lane.rows.length + " request" + (lane.rows.length === 1 ? "" : "s");
      y += laneHead;
      lane.rows.forEach(function (o) {
        var g = el("g", {}, svg);
        var name = el("text", { x: 14, y: y + 11 }, g);
        name.textContent = shortUrl(o[0]);
        var total = 0, parts = [];
        for (var i = 0; i < data.phases.length; i++) { total += o[FIRST_PHASE + i]; parts.push(data.phases[i][1] + " " + o[FIRST_PHASE + i].toFixed(1) + " ms"); }
        title(g, o[0] + "\nstarts at " + o[2].toFixed(1) + " ms, takes " + total.toFixed(1) + " ms" +
          (o[10] !== null ? " · status " + o[10] : "") + (o[11] !== null ? " · " + o[11] + " bytes" : "") + "\n" + parts.join(" · "));
        var x0 = labelW + o[2] * scale;
        for (var p = 0; p < data.phases.length; p++) {
          var w = o[FIRST_PHASE + p] * scale;
          if (w <= 0) continue;
          var r = el("rect", { x: x0, y: y + 2, width: Math.max(w, 0.6), height: rowH - 4, fill: data.phases[p][2], class: "seg" }, g);
          title(r, data.phases[p][1] + ": " + o[FIRST_PHASE + p].toFixed(1) + " ms — " + o[0]);
          x0 += w;
        }
        y += rowH;
      });
      y += 4;
    });
    if (path.length) {
      // the critical path under the requests: what held the load back at each instant
      y += 4;
      var head = el("text", { x: 4, y: y + 12, "font-weight": "bold" }, svg);
      head.textContent = "why: the critical path";
      y += laneHead;
      var note = el("text", { x: 14, y: y + 11 }, svg);
      note.textContent = "what held the load back";
      path.forEach(function (s) {
        var part = PARTS[s[2]] || [String(s[2]), String(s[2]), "#999999"];
        var r = el("rect", { x: labelW + s[0] * scale, y: y + 1, width: Math.max((s[1] - s[0]) * scale, 0.6), height: rowH - 2, fill: part[2], class: "seg" }, svg);
        var req = s[3] >= 0 && wf.objects[s[3]] ? " — " + wf.objects[s[3]][0] : "";
        title(r, part[1] + ": " + s[0].toFixed(1) + "–" + s[1].toFixed(1) + " ms (" + (s[1] - s[0]).toFixed(1) + " ms)" + req);
      });
    }
    return svg;
  }

  function legend(wf) {
    var div = document.createElement("div");
    div.className = "wf-legend";
    function item(colour, text) {
      var span = document.createElement("span"), i = document.createElement("i");
      i.style.background = colour;
      span.appendChild(i);
      span.appendChild(document.createTextNode(text));
      div.appendChild(span);
    }
    data.phases.forEach(function (p) { item(p[2], p[1]); });
    var used = {};
    (wf.why || []).forEach(function (s) { used[s[2]] = true; });
    PARTS.forEach(function (p, i) { if (used[i]) item(p[2], "why: " + p[1]); });
    return div;
  }

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest ? ev.target.closest(".wf-btn") : null;
    if (btn) {
      var row = btn.closest("tr");
      var next = row.nextElementSibling;
      if (next && next.classList.contains("wf-row")) {
        next.remove();
        btn.setAttribute("aria-expanded", "false");
        return;
      }
      var wf = data.waterfalls[btn.getAttribute("data-wf")];
      if (!wf) return;
      var tr = document.createElement("tr"), td = document.createElement("td");
      tr.className = "wf-row";
      td.colSpan = row.children.length;
      var h = document.createElement("p");
      h.className = "wf-title";
      h.textContent = wf.title;
      td.appendChild(h);
      td.appendChild(drawWaterfall(wf));
      td.appendChild(legend(wf));
      tr.appendChild(td);
      row.parentNode.insertBefore(tr, row.nextSibling);
      btn.setAttribute("aria-expanded", "true");
      return;
    }
    var img = ev.target.closest ? ev.target.closest("img[data-zoom]") : null;
    var dialog = document.getElementById("zoom");
    if (img && dialog && dialog.showModal) {
      dialog.querySelector("img").src = img.src;
      dialog.querySelector("img").alt = img.alt;
      dialog.showModal();
      return;
    }
    if (dialog && dialog.open && dialog.contains(ev.target)) dialog.close();
  });
})();

// celguard console: the little the pages cannot do alone. No inline script
// (the Content-Security-Policy forbids it), no third-party code.
"use strict";
(function () {
  // The approvals inbox: a server-sent event says the pending requests may
  // have changed; the list is fetched again (server-rendered, escaped) and
  // replaced, keeping the notes being typed and the focus.
  function liveInbox(box) {
    var last = null;
    function refresh() {
      fetch("/ui/inbox", { headers: { "X-Requested-With": "console" }, credentials: "same-origin" })
        .then(function (r) {
          if (r.status === 401) { window.location.assign("/ui/login"); return null; }
          return r.ok ? r.text() : null;
        })
        .then(function (html) {
          if (html === null || html === last) { return; }
          last = html;
          var notes = {};
          var focused = document.activeElement && document.activeElement.id;
          box.querySelectorAll("input[name=note]").forEach(function (n) { notes[n.id] = n.value; });
          box.setAttribute("aria-busy", "true");
          box.innerHTML = html;
          Object.keys(notes).forEach(function (id) {
            var n = document.getElementById(id);
            if (n) { n.value = notes[id]; }
          });
          if (focused) {
            var f = document.getElementById(focused);
            if (f) { f.focus(); }
          }
          box.setAttribute("aria-busy", "false");
        })
        .catch(function () {});
    }
    var es = new EventSource(box.getAttribute("data-live"));
    es.addEventListener("approvals", refresh);
  }

  // The decisions and session pages: on an event, the page is fetched
  // again (same address, same filters) and its live part replaced, at most
  // once a second.
  function livePage(box) {
    var busy = false, again = false;
    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      fetch(window.location.href, { headers: { "X-Requested-With": "console" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html === null) { return; }
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = doc.getElementById("live");
          if (fresh && fresh.innerHTML !== box.innerHTML) { box.innerHTML = fresh.innerHTML; }
        })
        .catch(function () {})
        .then(function () {
          window.setTimeout(function () {
            busy = false;
            if (again) { again = false; refresh(); }
          }, 1000);
        });
    }
    var es = new EventSource(box.getAttribute("data-live"));
    es.addEventListener("approvals", refresh);
  }

  // The playground's shareable link: the policy, the call and the bundle
  // switch, as base64url JSON in the URL fragment (#p=...).
  function b64encode(s) {
    var bytes = new TextEncoder().encode(s), bin = "";
    bytes.forEach(function (b) { bin += String.fromCharCode(b); });
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function b64decode(s) {
    var bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    return new TextDecoder().decode(bytes);
  }
  function playground(form) {
    var policy = document.getElementById("policy"), call = document.getElementById("call");
    var builtin = document.getElementById("builtin"), share = document.getElementById("share");
    function fragment() {
      return "#p=" + b64encode(JSON.stringify({ policy: policy.value, call: call.value, builtin: builtin.checked }));
    }
    var m = /^#p=([A-Za-z0-9_-]+)$/.exec(window.location.hash);
    if (m && !document.getElementById("result")) {
      try {
        var st = JSON.parse(b64decode(m[1]));
        if (typeof st.policy === "string") { policy.value = st.policy; }
        if (typeof st.call === "string") { call.value = st.call; }
        builtin.checked = st.builtin === true;
      } catch (e) { /* a broken link: keep the example */ }
    }
    function update() { share.setAttribute("href", "/ui/playground" + fragment()); }
    [policy, call, builtin].forEach(function (el) { el.addEventListener("input", update); el.addEventListener("change", update); });
    update();
    form.addEventListener("submit", function () { form.setAttribute("action", "/ui/playground" + fragment()); });
    var rec = document.getElementById("recorded");
    if (rec) {
      rec.addEventListener("change", function () {
        if (rec.value) { call.value = rec.value; update(); }
      });
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("inbox");
    if (box && window.EventSource) { liveInbox(box); }
    var live = document.getElementById("live");
    if (live && window.EventSource) { livePage(live); }
    var form = document.getElementById("playground");
    if (form) { playground(form); }
  });
})();

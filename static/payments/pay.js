// The public pages of a charge, enhanced: copy buttons, the Pix countdown, the status refreshed without a reload,
// and the boleto's Print button. Without JavaScript every page still shows everything (codes stay selectable).
(function () {
  "use strict";

  // --- Copy buttons (hidden until this script can make them work) ---
  function copyText(text, field) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Older browsers and plain-http pages: select the field and use the legacy command.
    return new Promise(function (resolve, reject) {
      field.focus();
      field.select();
      try { document.execCommand("copy") ? resolve() : reject(); } catch (e) { reject(e); }
    });
  }

  document.querySelectorAll("[data-copy]").forEach(function (button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    if (!field) return;
    var label = button.textContent;
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = field.getAttribute("data-copy-value") || field.value;
      copyText(text, field).then(function () {
        // The words come from the page, in its language.
        button.textContent = button.getAttribute("data-copied") || label;
      }, function () {
        field.focus();
        field.select();
        button.textContent = button.getAttribute("data-copy-failed") || label;
      });
      setTimeout(function () { button.textContent = label; }, 2500);
    });
  });

  document.querySelectorAll("[data-print]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () { window.print(); });
  });

  // --- Status and countdown (payment page only) ---
  var card = document.querySelector("[data-pay]");
  if (!card) return;
  var textsElement = document.getElementById("status-texts");
  var texts = textsElement ? JSON.parse(textsElement.textContent) : {};
  var box = card.querySelector("[data-status-box]");
  var labelElement = card.querySelector("[data-status-label]");
  var noteElement = card.querySelector("[data-status-note]");
  var settled = false;  // the server has reported a final status: nothing (not even the countdown) changes it now

  function show(status) {
    var text = texts[status] || { label: status, note: "" };  // a status added after this page was served
    if (card.getAttribute("data-status") === status) return;
    card.setAttribute("data-status", status);
    box.className = "status-box status-" + status.toLowerCase();
    labelElement.textContent = text.label;
    noteElement.textContent = text.note;
    noteElement.hidden = !text.note;
    if (status !== "PENDING") {
      // No longer payable: take the QR code, the code to copy and the countdown away.
      card.querySelectorAll("[data-payable]").forEach(function (section) { section.hidden = true; });
    }
  }

  // Countdown to pix.expiration, measured on the server's clock: the payer's phone may be minutes off.
  var countdown = card.querySelector("[data-countdown]");
  if (countdown) {
    var expiresAt = Date.parse(countdown.getAttribute("data-expires-at"));
    var skew = Date.parse(countdown.getAttribute("data-server-now")) - Date.now() || 0;
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    var tick = function () {
      if (settled) return;
      var left = Math.max(0, Math.floor((expiresAt - (Date.now() + skew)) / 1000));
      var days = Math.floor(left / 86400), hours = Math.floor(left % 86400 / 3600);
      var clock = pad(Math.floor(left % 3600 / 60)) + ":" + pad(left % 60);
      if (days || hours) clock = hours + ":" + clock;
      if (days) clock = days + " " + countdown.getAttribute(days === 1 ? "data-day" : "data-days") + " " + clock;
      countdown.textContent = countdown.getAttribute("data-time-left") + " " + clock;
      if (left === 0) {
        // The server moves the charge to EXPIRED shortly; the payer must not start a payment meanwhile. Polling goes
        // on: a Pix sent just before the deadline still shows up as PAID.
        show("EXPIRED");
        return;
      }
      setTimeout(tick, 1000 - (Date.now() + skew) % 1000);
    };
    if (!isNaN(expiresAt)) tick();
  }

  // Poll the status feed while the charge is pending; slower after errors, paused while the tab is hidden.
  var statusUrl = card.getAttribute("data-status-url");
  if (!statusUrl || !window.fetch) return;
  var interval = parseInt(card.getAttribute("data-poll-ms"), 10) || 3000;
  var delay = interval, timer = null, stopped = false;

  function schedule(ms) {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(poll, ms);
  }

  function poll() {
    if (document.hidden) return;  // resumed by visibilitychange
    fetch(statusUrl, { cache: "no-store", credentials: "omit", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (body) {
        delay = interval;
        // PENDING tells nothing new (and must not undo a countdown that reached zero); anything else is final.
        if (body.status && body.status !== "PENDING") {
          settled = stopped = true;
          show(body.status);
        }
        schedule(delay);
      }, function () {
        delay = Math.min(delay * 2, 60000);
        schedule(delay);
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) schedule(0);
  });
  schedule(interval);
})();

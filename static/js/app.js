// Progressive enhancement only: every action works without JavaScript. No inline handlers anywhere: the pages'
// Content-Security-Policy (script-src 'self') would block them, so behaviour is attached here, from data attributes.

// A destructive form asks first: <form data-confirm="Revoke this key?">. Cancelling the dialog sends nothing.
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
});

// Copy buttons: <button data-copy="input-id">.
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-copy]");
  if (!button) return;
  var input = document.getElementById(button.getAttribute("data-copy"));
  input.select();
  var label = button.textContent;
  var done = function () { button.textContent = button.getAttribute("data-copied") || label; setTimeout(function () { button.textContent = label; }, 1500); };
  if (navigator.clipboard) { navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand("copy"); done(); }); }
  else { document.execCommand("copy"); done(); }
});

// The header's menu button on a phone (the CSS shows it below 760 px): folds the navigation and the account's links
// away until asked for. Without this script the button stays hidden and everything is shown.
(function () {
  var button = document.querySelector(".menu-button");
  if (!button) return;
  var header = button.closest(".top");
  var set = function (open) {
    header.classList.toggle("menu-open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  };
  header.classList.add("has-menu");
  button.hidden = false;
  button.addEventListener("click", function () { set(!header.classList.contains("menu-open")); });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && header.classList.contains("menu-open")) { set(false); button.focus(); }
  });
})();

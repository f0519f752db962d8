// The console's only script: the copy button of a newly created key. Pages work without it.
'use strict';

function announce(text) {
  const status = document.getElementById('copy-status');
  if (status) status.textContent = text;
}

async function copyFrom(input) {
  try {
    await navigator.clipboard.writeText(input.value);
    announce('Copied to the clipboard.');
  } catch {
    // Clipboard API unavailable (plain http, permissions): select the text for Ctrl-C instead.
    input.focus();
    input.select();
    announce('Selected: press Ctrl-C (or Cmd-C) to copy.');
  }
}

document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy-target]') : null;
  if (!button) return;
  const input = document.getElementById(button.getAttribute('data-copy-target'));
  if (input) void copyFrom(input);
});

document.addEventListener('DOMContentLoaded', () => {
  // A field with the newly created key: select it so it is ready to copy.
  const fresh = document.getElementById('new-key-value');
  if (fresh) fresh.select();
});

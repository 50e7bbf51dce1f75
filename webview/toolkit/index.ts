// The one door to @vscode/webview-ui-toolkit (archived upstream): everything else in the webview builds
// its controls through these factories, so replacing the toolkit later touches this folder only.
// Only the components used are registered, which keeps the bundle and the startup small.
// Tests: test/unit/webview/panel.dom.test.ts

// @ts-expect-error TS1479: the repo type-checks as CommonJS (module Node16) and the toolkit is an ES module; this file only ever runs bundled by esbuild for the browser, so no require() is emitted (a dynamic import() would type-check but defeats tree-shaking: 243 kB → 688 kB).
import { provideVSCodeDesignSystem, vsCodeButton, vsCodeTextField } from '@vscode/webview-ui-toolkit';

let registered = false;

export function registerToolkit(): void {
  if (registered) return;
  provideVSCodeDesignSystem().register(vsCodeButton(), vsCodeTextField());
  registered = true;
}

export interface ButtonOptions {
  label: string;
  title?: string;
  appearance?: 'primary' | 'secondary' | 'icon';
  id?: string;
  onClick(): void;
}

export interface ToolkitButton {
  readonly element: HTMLElement;
  setLabel(label: string): void;
  setPressed(pressed: boolean): void;
}

export function button(o: ButtonOptions): ToolkitButton {
  const el = document.createElement('vscode-button');
  el.textContent = o.label;
  if (o.id) el.id = o.id;
  if (o.title) el.title = o.title;
  el.setAttribute('appearance', o.appearance ?? 'secondary');
  el.addEventListener('click', () => o.onClick());
  return {
    element: el,
    setLabel: (label) => {
      el.textContent = label;
    },
    setPressed: (pressed) => el.setAttribute('aria-pressed', String(pressed)),
  };
}

export interface TextFieldOptions {
  placeholder: string;
  id?: string;
  ariaLabel: string;
  onInput(value: string): void;
}

export interface ToolkitTextField {
  readonly element: HTMLElement;
  value: string;
}

export function textField(o: TextFieldOptions): ToolkitTextField {
  const el = document.createElement('vscode-text-field') as HTMLElement & { value: string };
  el.setAttribute('placeholder', o.placeholder);
  el.setAttribute('aria-label', o.ariaLabel);
  if (o.id) el.id = o.id;
  // The component replaces a missing label with "Text field" when it upgrades; put ours back after that.
  void customElements.whenDefined('vscode-text-field').then(() => queueMicrotask(() => el.setAttribute('aria-label', o.ariaLabel)));
  // 'input' is composed, so it leaves the component's shadow root and reaches the host element.
  el.addEventListener('input', () => o.onInput(el.value ?? ''));
  return {
    element: el,
    get value() {
      return el.value ?? '';
    },
    set value(v: string) {
      el.value = v;
    },
  };
}

export interface ToolkitBadge {
  readonly element: HTMLElement;
  set(text: string): void;
}

/**
 * Not the toolkit's <vscode-badge>: its template sets an inline `style` attribute, which the panel's CSP
 * (no 'unsafe-inline') blocks and reports. Same look, from the theme's badge colours.
 */
export function badge(text: string): ToolkitBadge {
  const el = document.createElement('span');
  el.className = 'pl-badge';
  el.textContent = text;
  return {
    element: el,
    set: (t) => {
      if (el.textContent !== t) el.textContent = t;
    },
  };
}

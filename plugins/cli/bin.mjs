#!/usr/bin/env node
// The `gatehouse` command. Gatehouse runs its TypeScript sources through tsx's loader: no build
// step, and no runtime cost once the modules are loaded.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');

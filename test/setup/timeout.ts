// Integration tests wait on a real control plane (node readiness, PDB status): allow minutes.
import { jest } from '@jest/globals';

jest.setTimeout(120_000);

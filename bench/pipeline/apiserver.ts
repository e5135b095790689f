/**
 * The apiserver's own /metrics, read with the admin kubeconfig's token and CA: how many
 * writes it served and how many watch bytes it sent, counted where they happen.
 */
import type * as k8s from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { metricSum } from './usage.js';

/** Reads the apiserver's exposition. */
export type ApiserverScrape = () => Promise<string>;

/** A scraper for the cluster of `kc` (a token user; the admin of the local control plane). */
export function apiserverScraper(kc: k8s.KubeConfig): { scrape: ApiserverScrape; close(): Promise<void> } {
  const cluster = kc.getCurrentCluster();
  const token = kc.getCurrentUser()?.token;
  if (!cluster || !token) throw new Error('apiserver metrics: the kubeconfig has no cluster or token user');
  const ca = cluster.caData
    ? Buffer.from(cluster.caData, 'base64')
    : cluster.caFile
      ? readFileSync(cluster.caFile)
      : undefined;
  const dispatcher = new Agent({ connect: ca ? { ca } : { rejectUnauthorized: !cluster.skipTLSVerify } });
  return {
    async scrape() {
      const response = await request(`${cluster.server}/metrics`, {
        dispatcher,
        headers: { authorization: `Bearer ${token}` },
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`apiserver /metrics: ${response.statusCode}`);
      return text;
    },
    close: () => dispatcher.close(),
  };
}

const WRITE_VERBS = ['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION', 'APPLY'];

/** Figures from one scrape that the run takes deltas of. */
export interface ApiserverCounters {
  writes: number;
  configMapWatchBytes: number;
  configMapWatchEvents: number;
}

/** The counters in an exposition (label sets vary by version: kind="ConfigMap" or resource="configmaps"). */
export function apiserverCounters(text: string): ApiserverCounters {
  const writes = WRITE_VERBS.reduce(
    (sum, verb) => sum + metricSum(text, 'apiserver_request_total', [`verb="${verb}"`]),
    0,
  );
  const configMaps = (name: string): number =>
    metricSum(text, name, ['kind="ConfigMap"']) || metricSum(text, name, ['resource="configmaps"']);
  return {
    writes,
    configMapWatchBytes: configMaps('apiserver_watch_events_sizes_sum'),
    configMapWatchEvents: configMaps('apiserver_watch_events_total'),
  };
}

/*
 * Every area's pages, registered at start (each register.ts only calls registerPage; the pages'
 * code loads on first visit). One import line per area.
 */
import './resources/register.ts'
import './admin/register.ts'
import './gitops/register.ts'
import './system/register.ts'
import './chat/register.ts'
import './agents/register.ts'
import './functions/register.ts'
import './jobs/register.ts'
import './files/register.ts'
